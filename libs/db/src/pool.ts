import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
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

/** Statement text -> name, for every statement declared with preparedStatement(). */
const preparedNames = new Map<string, string>();
const preparedTexts = new Map<string, string>();

/** A constant statement that pools created by createDb() send as a named prepared statement. */
export interface PreparedStatement<Row> {
  readonly name: string;
  readonly text: string;
  /** Type only: what one row of the result looks like. */
  readonly row?: Row;
}

/**
 * Declares a statement the hot paths run on every request (e.g. the API key lookup). Each
 * connection then parses and plans it once, under `name`, and afterwards only binds and executes
 * it: Postgres skips parse, analysis and (once it settles on a generic plan) planning, which it
 * would otherwise redo on every call. `text` must be constant, with every value a `$n` parameter.
 * Select named columns, never `*`: a prepared `*` keeps its column list, and Postgres refuses to
 * run it after a migration adds a column ("cached plan must not change result type").
 */
export function preparedStatement<Row>(name: string, text: string): PreparedStatement<Row> {
  const known = preparedTexts.get(name);
  if (known !== undefined && known !== text) {
    throw new Error(`prepared statement ${name} is already declared with other text`);
  }
  const otherName = preparedNames.get(text);
  if (otherName !== undefined && otherName !== name) {
    throw new Error(`prepared statement ${name} has the same text as ${otherName}`);
  }
  preparedTexts.set(name, text);
  preparedNames.set(text, name);
  return { name, text };
}

/** Runs a prepared statement through Kysely (same pool, transactions and error handling). */
export async function executePrepared<Row>(
  db: Kysely<Database>,
  statement: PreparedStatement<Row>,
  parameters: readonly unknown[],
): Promise<Row[]> {
  const result = await db.executeQuery<Row>(CompiledQuery.raw(statement.text, [...parameters]));
  return result.rows;
}

type QueryArguments = Parameters<(config: unknown, values?: unknown, callback?: unknown) => void>;

/**
 * pg sends a query as a named statement when its config carries a name. Kysely passes only text
 * and values, so the pool's clients add the name for declared statements, found by their text.
 */
class PreparingClient extends pg.Client {}
// eslint-disable-next-line @typescript-eslint/unbound-method -- only ever called with .call(this)
const plainQuery = pg.Client.prototype.query as (...args: QueryArguments) => unknown;
PreparingClient.prototype.query = function (
  this: pg.Client,
  ...[config, values, callback]: QueryArguments
): unknown {
  const name = typeof config === 'string' ? preparedNames.get(config) : undefined;
  return name === undefined
    ? plainQuery.call(this, config, values, callback)
    : plainQuery.call(this, { name, text: config }, values, callback);
} as pg.Client['query'];

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
    Client: PreparingClient,
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

/** Readiness probes' Postgres check: a round trip that needs nothing but a working connection. */
export async function pingDatabase(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}
