import { z } from 'zod';
import {
  ConfigError,
  baseEnvSchema,
  ownMetricsPort,
  parseEnv,
  port,
  withOwnMetricsPort,
} from './index';

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

describe('a service metrics port (ownMetricsPort, withOwnMetricsPort)', () => {
  const schema = baseEnvSchema.extend({
    METRICS_PORT: port(9464),
    GATEWAY_METRICS_PORT: ownMetricsPort,
  });
  const load = (env: Record<string, string>) => {
    const config = parseEnv(schema, env);
    return withOwnMetricsPort(config, config.GATEWAY_METRICS_PORT).METRICS_PORT;
  };

  it("takes the service's own variable over METRICS_PORT, then METRICS_PORT, then the default", () => {
    expect(load({ METRICS_PORT: '9500', GATEWAY_METRICS_PORT: '9600' })).toBe(9600);
    expect(load({ GATEWAY_METRICS_PORT: '0' })).toBe(0);
    expect(load({ METRICS_PORT: '9500' })).toBe(9500);
    expect(load({ METRICS_PORT: '9500', GATEWAY_METRICS_PORT: '' })).toBe(9500);
    expect(load({})).toBe(9464);
  });

  it('names the variable that is wrong', () => {
    expect(() => load({ GATEWAY_METRICS_PORT: '70000' })).toThrow(
      expect.objectContaining({ problems: ['GATEWAY_METRICS_PORT: must be a port number'] }),
    );
  });
});
