import type { DbHandle } from '@linkservice/db';
import { createDb, ReplicaReads } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';

/** The DATABASE_* variables every service reads (baseEnvSchema). */
export interface PostgresConfig {
  DATABASE_URL: string;
  DATABASE_POOL_SIZE: number;
  DATABASE_QUERY_TIMEOUT_MS: number;
  DATABASE_STATEMENT_TIMEOUT_MS: number;
  DATABASE_CONNECT_TIMEOUT_MS: number;
}

/**
 * A service's pool, from the DATABASE_* variables every service reads; `applicationName` shows
 * in pg_stat_activity. A connection Postgres drops is logged, never an unhandled 'error'. Every
 * query is bounded on the client (DATABASE_QUERY_TIMEOUT_MS, or the caller's deadline scope:
 * pg's query_timeout, which holds behind PgBouncer and against a frozen server alike), on the
 * server by the role's statement_timeout (or DATABASE_STATEMENT_TIMEOUT_MS on a direct
 * connection) and by SET LOCAL inside transactions; getting a connection by
 * DATABASE_CONNECT_TIMEOUT_MS. Nothing depends on session state, so the URL may name PgBouncer
 * in transaction mode.
 */
export function createPostgres(
  config: PostgresConfig,
  { applicationName, logger }: { applicationName: string; logger: Logger },
): DbHandle {
  return createDb({
    connectionString: config.DATABASE_URL,
    max: config.DATABASE_POOL_SIZE,
    applicationName,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
    connectionTimeoutMs: config.DATABASE_CONNECT_TIMEOUT_MS,
    onConnectionError: (error) => {
      logger.warn({ err: error }, 'postgres connection lost');
    },
  });
}

/** The DATABASE_READ_* variables of the services that read (gateway, redirect). */
export interface ReadReplicaConfig extends PostgresConfig {
  DATABASE_READ_URL?: string | undefined;
  DATABASE_READ_CONNECT_TIMEOUT_MS: number;
  DATABASE_READ_POLL_MS: number;
  DATABASE_READ_CLOCK_SKEW_MS: number;
}

export interface ReadReplicaHandle {
  reads: ReplicaReads;
  /** Stops the poller and ends the replica's pool (not the primary's). */
  close(): Promise<void>;
}

/**
 * The replica reads of a service over its primary pool: without DATABASE_READ_URL every read
 * goes to the primary. With it, a pool of its own (connect timeout DATABASE_READ_CONNECT_TIMEOUT_MS,
 * short) and a poller of the replay position every DATABASE_READ_POLL_MS (unref'd). The replica
 * is never a readiness dependency: when it is away, reads go to the primary.
 */
export function createReadReplica(
  config: ReadReplicaConfig,
  primary: DbHandle,
  options: { applicationName: string; logger: Logger },
): ReadReplicaHandle {
  const { applicationName, logger } = options;
  if (!config.DATABASE_READ_URL) {
    return {
      reads: new ReplicaReads({ primary: primary.db, replica: undefined }),
      close: () => Promise.resolve(),
    };
  }
  const replica = createDb({
    connectionString: config.DATABASE_READ_URL,
    max: config.DATABASE_POOL_SIZE,
    applicationName: `${applicationName}-read`,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    connectionTimeoutMs: config.DATABASE_READ_CONNECT_TIMEOUT_MS,
    onConnectionError: (error) => {
      logger.warn({ err: error }, 'postgres replica connection lost');
    },
  });
  const reads = new ReplicaReads({
    primary: primary.db,
    replica: replica.db,
    clockSkewMs: config.DATABASE_READ_CLOCK_SKEW_MS,
    onReplicaError: (error) => {
      logger.warn({ err: error }, 'postgres replica failed: reads go to the primary');
    },
  });
  let polling: Promise<unknown> = reads.poll();
  const timer = setInterval(() => {
    polling = reads.poll();
  }, config.DATABASE_READ_POLL_MS);
  timer.unref();
  let closed: Promise<void> | undefined;
  return {
    reads,
    close: () =>
      (closed ??= (async () => {
        clearInterval(timer);
        await polling;
        await replica.close();
      })()),
  };
}
