import type { Logger } from '@linkservice/logger';
import type pg from 'pg';

/**
 * node-postgres emits 'error' on a checked-out client whose connection dies between queries,
 * and nothing listens there (the pool listens only while a client is idle), so the process would
 * crash. That happens on purpose here: Postgres ends a creation transaction left idle past its
 * budget (idle_in_transaction_session_timeout). The job's next query then fails and rolls back
 * as an ordinary error; the event itself only needs logging.
 */
export function handleCheckedOutClientErrors(pool: pg.Pool, logger: Logger): void {
  pool.on('connect', (client) => {
    client.on('error', (error) => {
      logger.warn({ err: error }, 'postgres connection lost while in use');
    });
  });
}
