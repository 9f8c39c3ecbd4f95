import type { DbHandle } from '@linkservice/db';
import { createDb, ReplicaReads } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';

/** The DATABASE_* variables every service reads (baseEnvSchema). */
export interface PostgresConfig {
  DATABASE_URL: string;
  DATABASE_POOL_SIZE: number;
  DATABASE_QUERY_TIMEOUT_MS: number;
  DATABASE_STATEMENT_TIMEOUT_MS: number;
  DATABASE_NAMED_STATEMENTS: boolean;
  DATABASE_CONNECT_TIMEOUT_MS: number;
}

/**
 * A service's pool, from the DATABASE_* variables every service reads; `applicationName` shows
 * in pg_stat_activity. A connection Postgres drops is logged, never an unhandled 'error'. Every
 * query is bounded on the client (DATABASE_QUERY_TIMEOUT_MS, or the caller's deadline scope:
 * pg's query_timeout, which holds behind PgBouncer and against a frozen server alike), on the
 * server by the role's statement_timeout (or DATABASE_STATEMENT_TIMEOUT_MS on a direct
 * connection) and by SET LOCAL inside transactions; getting a connection by
 * DATABASE_CONNECT_TIMEOUT_MS. Nothing else depends on session state than the named statements
 * (DATABASE_NAMED_STATEMENTS), so with those off the URL may name any PgBouncer in transaction
 * mode, and with them on one from 1.21 with `max_prepared_statements`.
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
    namedStatements: config.DATABASE_NAMED_STATEMENTS,
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
  /**
   * The reads over `primary` (the service's pool, or what a test swapped in), polling the
   * replica's replay position from the first call on. Without DATABASE_READ_URL: all primary.
   */
  readsOver(primary: DbHandle['db']): ReplicaReads;
  /** Stops the poller and ends the replica's pool (not the primary's). */
  close(): Promise<void>;
}

/**
 * The replica of a service that reads: without DATABASE_READ_URL every read goes to the primary.
 * With it, a pool of its own (connect timeout DATABASE_READ_CONNECT_TIMEOUT_MS, short) and a
 * poller of the replay position every DATABASE_READ_POLL_MS (unref'd). The replica is never a
 * readiness dependency: when it is away, reads go to the primary.
 */
export function openReadReplica(
  config: ReadReplicaConfig,
  { applicationName, logger }: { applicationName: string; logger: Logger },
): ReadReplicaHandle {
  const url = config.DATABASE_READ_URL;
  if (!url) {
    return {
      readsOver: (primary) => new ReplicaReads({ primary, replica: undefined }),
      close: () => Promise.resolve(),
    };
  }
  const replica = createDb({
    connectionString: url,
    max: config.DATABASE_POOL_SIZE,
    applicationName: `${applicationName}-read`,
    queryTimeoutMs: config.DATABASE_QUERY_TIMEOUT_MS,
    namedStatements: config.DATABASE_NAMED_STATEMENTS,
    connectionTimeoutMs: config.DATABASE_READ_CONNECT_TIMEOUT_MS,
    onConnectionError: (error) => {
      logger.warn({ err: error }, 'postgres replica connection lost');
    },
  });
  let timer: NodeJS.Timeout | undefined;
  let polling: Promise<unknown> = Promise.resolve();
  let closed: Promise<void> | undefined;
  return {
    readsOver: (primary) => {
      const reads = new ReplicaReads({
        primary,
        replica: replica.db,
        clockSkewMs: config.DATABASE_READ_CLOCK_SKEW_MS,
        onReplicaError: (error) => {
          logger.warn({ err: error }, 'postgres replica failed: reads go to the primary');
        },
      });
      clearInterval(timer);
      polling = reads.poll();
      timer = setInterval(() => {
        polling = reads.poll();
      }, config.DATABASE_READ_POLL_MS);
      timer.unref();
      return reads;
    },
    close: () =>
      (closed ??= (async () => {
        clearInterval(timer);
        await polling;
        await replica.close();
      })()),
  };
}
