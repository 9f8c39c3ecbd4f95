import { ConfigError } from '@linkservice/config';
import { loadConfig } from './config';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      GATEWAY_PORT: 8080,
      CREATION_LIMIT_PER_HOUR: 300,
      CREATION_TIMEOUT_MS: 10_000,
      SDK_RATE_LIMIT_PER_MINUTE: 600,
      SHUTDOWN_GRACE_MS: 10_000,
      TRUST_PROXY: false,
      LINK_DOMAIN: 'links.localhost',
      REDIS_PREFIX: 'ls',
    });
  });

  it.each([
    ['true', true],
    ['false', false],
    ['2', 2],
    ['loopback, 10.0.0.0/8', 'loopback, 10.0.0.0/8'],
  ])('reads TRUST_PROXY=%j', (value, expected) => {
    expect(loadConfig({ TRUST_PROXY: value }).TRUST_PROXY).toEqual(expected);
  });

  it('reads SDK_RATE_LIMIT_PER_MINUTE', () => {
    expect(loadConfig({ SDK_RATE_LIMIT_PER_MINUTE: '5' }).SDK_RATE_LIMIT_PER_MINUTE).toBe(5);
  });

  it.each(['0', '-1', '1.5', 'many'])('refuses SDK_RATE_LIMIT_PER_MINUTE=%j', (value) => {
    expect(() => loadConfig({ SDK_RATE_LIMIT_PER_MINUTE: value })).toThrow(
      /SDK_RATE_LIMIT_PER_MINUTE/,
    );
  });

  it('lists every bad variable at once', () => {
    let caught: unknown;
    try {
      loadConfig({ GATEWAY_PORT: '99999', CREATION_LIMIT_PER_HOUR: '0', CREATION_TIMEOUT_MS: 'x' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems.join('\n');
    for (const name of ['GATEWAY_PORT', 'CREATION_LIMIT_PER_HOUR', 'CREATION_TIMEOUT_MS']) {
      expect(problems).toContain(name);
    }
  });
});
