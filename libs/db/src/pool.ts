import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema';

type TypeId = Parameters<typeof pg.types.getTypeParser>[0];
const INT8_OID: TypeId = pg.types.builtins.INT8;

/** Counters and COUNT(*) are int8; every value we keep fits a JS number, so parse them as one. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: TypeId, format: 'text' | 'binary' = 'text'): unknown =>
    oid === INT8_OID && format === 'text'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

export interface DbOptions {
  connectionString: string;
  max?: number;
  applicationName?: string;
  /** Told about connections lost outside a query (the pool replaces them); e.g. a log line. */
  onConnectionError?: (error: Error) => void;
}

export interface DbHandle {
  db: Kysely<Database>;
  pool: pg.Pool;
  /** Ends the pool; safe to call more than once. */
  close(): Promise<void>;
}

export function createDb({
  connectionString,
  max = 10,
  applicationName,
  onConnectionError = () => undefined,
}: DbOptions): DbHandle {
  const pool = new pg.Pool({
    connectionString,
    max,
    types,
    application_name: applicationName,
    connectionTimeoutMillis: 5_000,
  });
  // A connection that dies between queries emits 'error' on its client: through the pool while
  // the client is idle, on the client itself while it is checked out (e.g. a transaction ended
  // by idle_in_transaction_session_timeout). Unheard, either would crash the process; the next
  // query on that client fails as an ordinary error and the pool replaces the connection.
  pool.on('error', onConnectionError);
  pool.on('connect', (client) => {
    client.on('error', onConnectionError);
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  let closed: Promise<void> | undefined;
  return {
    db,
    pool,
    close: () =>
      (closed ??= (async () => {
        await db.destroy();
        // Kysely ends the pool only if it ever ran a query; one used only through `pool` (or not
        // at all) would keep its connections and their idle timers alive.
        if (!pool.ending) await pool.end();
      })()),
  };
}
