import type { DbHandle } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';

/**
 * A service's pool, from the DATABASE_* variables every service reads; `applicationName` shows
 * in pg_stat_activity. A connection Postgres drops is logged, never an unhandled 'error'.
 */
export function createPostgres(
  config: { DATABASE_URL: string; DATABASE_POOL_SIZE: number },
  { applicationName, logger }: { applicationName: string; logger: Logger },
): DbHandle {
  return createDb({
    connectionString: config.DATABASE_URL,
    max: config.DATABASE_POOL_SIZE,
    applicationName,
    onConnectionError: (error) => {
      logger.warn({ err: error }, 'postgres connection lost');
    },
  });
}
