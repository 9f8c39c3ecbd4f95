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
}

export interface DbHandle {
  db: Kysely<Database>;
  pool: pg.Pool;
  /** Ends the pool; safe to call more than once. */
  close(): Promise<void>;
}

export function createDb({ connectionString, max = 10, applicationName }: DbOptions): DbHandle {
  const pool = new pg.Pool({
    connectionString,
    max,
    types,
    application_name: applicationName,
    connectionTimeoutMillis: 5_000,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  let closed: Promise<void> | undefined;
  return {
    db,
    pool,
    close: () => (closed ??= db.destroy()),
  };
}
