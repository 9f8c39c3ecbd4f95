import type { DbHandle } from '@linkservice/db';
import { createDb } from '@linkservice/db';
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
 * query is bounded on the client (DATABASE_QUERY_TIMEOUT_MS, or the caller's deadline scope) and
 * on the server (DATABASE_STATEMENT_TIMEOUT_MS); getting a connection by
 * DATABASE_CONNECT_TIMEOUT_MS.
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
