import { z } from 'zod';
import { ConfigError, baseEnvSchema, parseEnv, port } from './index';

describe('parseEnv', () => {
  it('applies the documented defaults', () => {
    const config = parseEnv(baseEnvSchema, {});
    expect(config.DATABASE_URL).toBe('postgres://postgres@127.0.0.1:5432/linkservice');
    expect(config.REDIS_URL).toBe('redis://127.0.0.1:6379');
    expect(config.LINK_DOMAIN).toBe('links.localhost');
  });

  it('treats empty strings as unset', () => {
    expect(parseEnv(baseEnvSchema, { LINK_DOMAIN: '' }).LINK_DOMAIN).toBe('links.localhost');
  });

  it('lists every bad variable at once', () => {
    const schema = baseEnvSchema.extend({ GATEWAY_PORT: port(8080) });
    let caught: unknown;
    try {
      parseEnv(schema, { DATABASE_URL: 'mysql://x', REDIS_URL: 'nope', GATEWAY_PORT: 'abc' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems.join('\n');
    expect(problems).toContain('DATABASE_URL');
    expect(problems).toContain('REDIS_URL');
    expect(problems).toContain('GATEWAY_PORT');
  });

  it('coerces numbers', () => {
    const schema = z.object({ PORT: port(1) });
    expect(parseEnv(schema, { PORT: '8090' }).PORT).toBe(8090);
  });
});
