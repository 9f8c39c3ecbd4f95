import { z } from 'zod';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

/**
 * Parses the environment with a zod object schema and reports every bad variable at once.
 * Empty strings count as unset so `FOO=` falls back to the default.
 */
export function parseEnv<T extends z.ZodObject>(schema: T, env: Env): z.infer<T> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''));
  const result = schema.safeParse(cleaned);
  const problems = result.success
    ? []
    : result.error.issues.map((issue) => `${issue.path.join('.') || '(env)'}: ${issue.message}`);
  for (const [one, other] of EXCLUSIVE) {
    if (one in schema.shape && other in schema.shape && cleaned[one] && cleaned[other]) {
      problems.push(`${other}: set ${one} or ${other}, not both`);
    }
  }
  if (!result.success || problems.length > 0) throw new ConfigError(problems);
  return result.data;
}

/** Variables that name the same thing two ways: at most one of each pair may be set. */
const EXCLUSIVE = [['REDIS_URL', 'REDIS_CLUSTER_NODES']] as const;

/** Calls `load`, and on a ConfigError prints it and exits: for service entry points only. */
export function loadOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

const postgresUrl = z
  .url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' })
  .default('postgres://postgres@127.0.0.1:5432/linkservice');
const redisUrl = z
  .url({ protocol: /^rediss?$/, error: 'must be a redis:// URL' })
  .default('redis://127.0.0.1:6379');

/**
 * REDIS_CLUSTER_NODES: `host:port,host:port,…`, a few of the cluster's nodes (any of them: the
 * client learns the rest from the cluster). An entry may also be a `redis://` or `rediss://`
 * URL, for a cluster that wants a password or TLS; the first entry's credentials and TLS apply
 * to every node.
 */
const redisClusterNodes = z.string().transform((text, ctx) => {
  const nodes: { host: string; port: number; url?: URL }[] = [];
  for (const entry of text.split(',').map((part) => part.trim())) {
    const url = URL.canParse(entry) && /^rediss?:/.test(entry) ? new URL(entry) : null;
    const match = url ? null : /^(\[[^\]]+\]|[^:\s/]+):(\d{1,5})$/.exec(entry);
    const host = url ? url.hostname : match?.[1];
    const portText = url ? url.port || '6379' : match?.[2];
    const portValue = Number(portText);
    if (!host || !Number.isInteger(portValue) || portValue < 1 || portValue > 65535) {
      ctx.addIssue({
        code: 'custom',
        message: `must be host:port entries separated by commas (${JSON.stringify(entry)} is not one)`,
      });
      return z.NEVER;
    }
    nodes.push({ host: host.replace(/^\[|\]$/g, ''), port: portValue, ...(url ? { url } : {}) });
  }
  const first = nodes[0]?.url;
  return {
    nodes: nodes.map(({ host, port: nodePort }) => ({ host, port: nodePort })),
    ...(first?.username ? { username: decodeURIComponent(first.username) } : {}),
    ...(first?.password ? { password: decodeURIComponent(first.password) } : {}),
    tls: first?.protocol === 'rediss:',
  };
});

export type RedisClusterConfig = z.infer<typeof redisClusterNodes>;

const portNumber = z.coerce
  .number({ error: 'must be a port number' })
  .int('must be a port number')
  .min(0, 'must be a port number')
  .max(65535, 'must be a port number');

export const port = (fallback: number) => portNumber.default(fallback);

/**
 * The Prometheus port of one service: its own variable (GATEWAY_METRICS_PORT, …) wins over
 * METRICS_PORT, so the three services of one `pnpm start` can each have one while METRICS_PORT
 * keeps serving a service run alone (and the chart, one service per pod). Each variable is
 * checked under its own name; the config keeps the answer in METRICS_PORT.
 */
export const ownMetricsPort = portNumber.optional();

export function withOwnMetricsPort<C extends { METRICS_PORT: number }>(
  config: C,
  own: number | undefined,
): C {
  return own === undefined ? config : { ...config, METRICS_PORT: own };
}

export const positiveInt = (fallback: number) =>
  z.coerce
    .number({ error: 'must be a positive integer' })
    .int('must be a positive integer')
    .positive('must be a positive integer')
    .default(fallback);

/** A whole number of ms or units where 0 means "off". */
export const nonNegativeInt = (fallback: number) =>
  z.coerce
    .number({ error: 'must be a non-negative integer' })
    .int('must be a non-negative integer')
    .min(0, 'must be a non-negative integer')
    .default(fallback);

const hostname =
  /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/** Variables every service shares. Each service's config.ts extends this. */
export const baseEnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: postgresUrl,
  DATABASE_POOL_SIZE: positiveInt(10),
  /**
   * Client-side bound of each Postgres query run outside a request's own deadline (the gateway's
   * per-request budget replaces it): past it the query fails and its connection is closed. The
   * only bound that holds when the server is frozen (SIGSTOP, blackhole); 0 turns it off.
   */
  DATABASE_QUERY_TIMEOUT_MS: nonNegativeInt(2_000),
  /**
   * Server-side statement_timeout sent at connection start-up, for direct connections only:
   * PgBouncer refuses the parameter. 0 (the default) keeps the role's setting, the way to give
   * every statement a server-side bound behind PgBouncer too (docs/operations.md).
   */
  DATABASE_STATEMENT_TIMEOUT_MS: nonNegativeInt(0),
  /**
   * The hot paths' constant statements as named prepared statements (parsed and planned once per
   * connection). false behind PgBouncer in transaction mode before 1.21, or later without
   * `max_prepared_statements`: a name lives in one server session.
   */
  DATABASE_NAMED_STATEMENTS: z.stringbool({ error: 'must be true or false' }).default(true),
  /**
   * A streaming replica (or a PgBouncer in front of exactly one) for reads: GET, lists, resolve,
   * the link host's cache misses. Unset: every read goes to DATABASE_URL.
   */
  DATABASE_READ_URL: z
    .url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// URL' })
    .optional(),
  /** Getting a replica connection: short, so a dead replica costs little before the primary. */
  DATABASE_READ_CONNECT_TIMEOUT_MS: positiveInt(500),
  /** How often the replica's replay position (and the lag gauge) is polled. */
  DATABASE_READ_POLL_MS: positiveInt(1_000),
  /** Clock difference allowed between the primary and a time fence's clock (the link host's). */
  DATABASE_READ_CLOCK_SKEW_MS: nonNegativeInt(50),
  /** How long getting a pool connection may take, waiting for a free one or opening one. */
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt(2_000),
  /** A single Redis (the default). */
  REDIS_URL: redisUrl,
  /** A Redis Cluster instead of REDIS_URL: a few of its nodes (see redisClusterNodes). */
  REDIS_CLUSTER_NODES: redisClusterNodes.optional(),
  /** Namespaces every Redis key (queues, limits, caches) so stacks can share one Redis. */
  REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 : _ -')
    .default('ls'),
  LINK_DOMAIN: z
    .string()
    .toLowerCase()
    .regex(hostname, 'must be a DNS host name such as links.example.com')
    .default('links.localhost'),
});

export type BaseConfig = z.infer<typeof baseEnvSchema>;

/** Where a process' Redis is: REDIS_CLUSTER_NODES when set, else REDIS_URL. */
export type RedisTarget = Pick<BaseConfig, 'REDIS_URL' | 'REDIS_CLUSTER_NODES'>;
