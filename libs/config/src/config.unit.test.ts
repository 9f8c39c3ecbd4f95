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

describe('REDIS_CLUSTER_NODES', () => {
  const problemsOf = (env: Record<string, string>): string[] => {
    try {
      parseEnv(baseEnvSchema, env);
    } catch (error) {
      if (error instanceof ConfigError) return error.problems;
      throw error;
    }
    return [];
  };

  it('is unset by default: a single Redis on REDIS_URL', () => {
    expect(parseEnv(baseEnvSchema, {}).REDIS_CLUSTER_NODES).toBeUndefined();
  });

  it('reads host:port entries, IPv6 in brackets, spaces around commas', () => {
    const config = parseEnv(baseEnvSchema, {
      REDIS_CLUSTER_NODES: 'redis-0.redis:6379, 10.0.0.2:7000,[::1]:7001',
    });
    expect(config.REDIS_CLUSTER_NODES).toEqual({
      nodes: [
        { host: 'redis-0.redis', port: 6379 },
        { host: '10.0.0.2', port: 7000 },
        { host: '::1', port: 7001 },
      ],
      tls: false,
    });
  });

  it('takes credentials and TLS from a first entry that is a URL', () => {
    const config = parseEnv(baseEnvSchema, {
      REDIS_CLUSTER_NODES: 'rediss://app:p%40ss@cache-0.internal:6380,cache-1.internal:6380',
    });
    expect(config.REDIS_CLUSTER_NODES).toEqual({
      nodes: [
        { host: 'cache-0.internal', port: 6380 },
        { host: 'cache-1.internal', port: 6380 },
      ],
      username: 'app',
      password: 'p@ss',
      tls: true,
    });
  });

  it('refuses an entry without a port, or with a bad one, naming it', () => {
    for (const bad of ['redis-0', 'redis-0:0', 'redis-0:70000', 'a:1,,b:2', 'http://x:1']) {
      const problems = problemsOf({ REDIS_CLUSTER_NODES: bad });
      expect({ bad, problems }).toEqual({
        bad,
        problems: [expect.stringMatching(/^REDIS_CLUSTER_NODES: must be host:port entries/)],
      });
    }
  });

  it('refuses REDIS_URL and REDIS_CLUSTER_NODES together', () => {
    expect(
      problemsOf({ REDIS_URL: 'redis://127.0.0.1:6379', REDIS_CLUSTER_NODES: '127.0.0.1:7000' }),
    ).toEqual(['REDIS_CLUSTER_NODES: set REDIS_URL or REDIS_CLUSTER_NODES, not both']);
    // An empty one is unset.
    expect(problemsOf({ REDIS_URL: '', REDIS_CLUSTER_NODES: '127.0.0.1:7000' })).toEqual([]);
  });
});
