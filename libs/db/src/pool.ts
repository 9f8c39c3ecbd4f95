import { createHash } from 'node:crypto';
import { CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import parseTimestamp from 'postgres-date';
import { currentQueryDeadline, QueryDeadlineExceeded, queryBudget } from './query-deadline';
import type { Database } from './schema';

type TypeId = Parameters<typeof pg.types.getTypeParser>[0];
const INT8_OID: TypeId = pg.types.builtins.INT8;
const DATE_OID: TypeId = pg.types.builtins.DATE;
const TIMESTAMPTZ_OID: TypeId = pg.types.builtins.TIMESTAMPTZ;
const TIMESTAMP_OID: TypeId = pg.types.builtins.TIMESTAMP;

/**
 * Counters and COUNT(*) are int8; every value we keep fits a JS number, so parse them as one.
 * A date stays its 'YYYY-MM-DD' text: pg would make it a Date at local midnight. Timestamps
 * are read by postgres-date 2 (the same Dates as pg's own postgres-date 1, from a scanner
 * instead of regular expressions, in half the time): a list page holds a hundred of them.
 */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: TypeId, format: 'text' | 'binary' = 'text'): unknown => {
    if (format === 'text' && oid === INT8_OID) return (value: string) => Number(value);
    if (format === 'text' && oid === DATE_OID) return (value: string) => value;
    if (format === 'text' && (oid === TIMESTAMPTZ_OID || oid === TIMESTAMP_OID)) {
      return parseTimestamp;
    }
    return pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** A constant statement the hot paths run on every request (e.g. the API key lookup). */
export interface ConstantStatement<Row> {
  readonly text: string;
  /** Type only: what one row of the result looks like. */
  readonly row?: Row;
}

/** Text -> name of every constant statement, for the pools that send them named. */
const statementNames = new Map<string, string>();

/**
 * Declares a constant statement, with every value a `$n` parameter; select named columns, never
 * `*` (a prepared `*` keeps its column list, and Postgres refuses to run it after a migration
 * adds a column: "cached plan must not change result type").
 *
 * A pool made with `namedStatements` (the default) sends it as a named prepared statement: each
 * connection parses and plans it once, and afterwards only binds and executes it. That is most
 * of such a statement's server time (measured here on a three-table join: about 40 us named
 * against 220 us unnamed). A name lives in one server session, though: behind PgBouncer in
 * transaction mode before 1.21 (or later without `max_prepared_statements`), the next
 * transaction may run on a server connection that never saw the Parse ("prepared statement
 * ... does not exist"). There, a pool made without it sends every statement unnamed
 * (DATABASE_NAMED_STATEMENTS=false). The name comes from the text, so it is the same in every
 * process and version that runs the same text.
 */
export function constantStatement<Row>(text: string): ConstantStatement<Row> {
  if (!statementNames.has(text)) {
    statementNames.set(text, `ls_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`);
  }
  return { text };
}

/** Runs a constant statement through Kysely (same pool, transactions and error handling). */
export async function executeStatement<Row>(
  db: Kysely<Database>,
  statement: ConstantStatement<Row>,
  parameters: readonly unknown[],
): Promise<Row[]> {
  const result = await db.executeQuery<Row>(CompiledQuery.raw(statement.text, [...parameters]));
  return result.rows;
}

type QueryArguments = Parameters<(config: unknown, values?: unknown, callback?: unknown) => void>;
type QueryCallback = (error: Error | null, result?: unknown) => void;

/** pg's own wording when a query's `query_timeout` passes (client side, see pg/lib/client.js). */
const QUERY_READ_TIMEOUT = 'Query read timeout';

/** What a pg.Client keeps about itself that the subclass below reads. */
interface ClientInternals {
  connectionParameters: { query_timeout?: number | false };
}

/**
 * The pool's clients bound every query by its deadline (query-deadline.ts): pg's client-side
 * `query_timeout`, from the caller's withQueryDeadline() scope or else the pool's default. A
 * connection whose query ran out of time is closed, never reused: its query may still run (or be
 * queued in a frozen server) and answer the next one's read, and inside a transaction the
 * ROLLBACK that follows cannot reach the server either. Closing the socket makes Postgres roll
 * back whatever it held; the pool sees the client is ending and replaces it on release.
 */
class DeadlineClient extends pg.Client {
  /** Set once a deadline closed this connection: later queries fail at once, and say why. */
  private closedByDeadline = false;
  /** Whether constant statements go named (createDb's `namedStatements`). */
  readonly namesStatements: boolean;

  constructor(config?: pg.ClientConfig & { namedStatements?: boolean }) {
    super(config);
    this.namesStatements = config?.namedStatements === true;
  }

  /** Closes this connection because a query ran out of time (see the class comment). */
  closeAfterDeadline(): void {
    if (this.closedByDeadline) return;
    this.closedByDeadline = true;
    // With the timed-out query still active, end() destroys the socket instead of waiting for
    // the server to acknowledge a Terminate it may never read.
    this.end().catch(() => undefined);
  }

  get closedAfterDeadline(): boolean {
    return this.closedByDeadline;
  }
}
// eslint-disable-next-line @typescript-eslint/unbound-method -- only ever called with .call(this)
const plainQuery = pg.Client.prototype.query as (...args: QueryArguments) => unknown;

/** Fails a query without sending it, through its callback or its promise (as pg would). */
function refuse(error: Error, callback: unknown): unknown {
  if (typeof callback === 'function') {
    process.nextTick(() => {
      (callback as QueryCallback)(error);
    });
    return undefined;
  }
  return Promise.reject(error);
}

DeadlineClient.prototype.query = function (
  this: DeadlineClient,
  ...[config, values, callback]: QueryArguments
): unknown {
  // Custom submittables (cursors, streams) keep pg's own handling and the pool default.
  if (typeof config === 'object' && config !== null && 'submit' in config) {
    return plainQuery.call(this, config, values, callback);
  }
  if (this.closedAfterDeadline) {
    return refuse(
      new QueryDeadlineExceeded('the connection was closed after a query ran out of time'),
      typeof values === 'function' ? values : callback,
    );
  }
  const poolTimeout = (this as unknown as ClientInternals).connectionParameters.query_timeout;
  const budget = queryBudget(
    Date.now(),
    currentQueryDeadline(),
    typeof poolTimeout === 'number' ? poolTimeout : undefined,
  );
  if (budget.kind === 'expired') {
    // Nothing is sent; but inside a transaction the caller's ROLLBACK would be refused too, and
    // the connection would go back to the pool mid-transaction: close it instead.
    if (this.getTransactionStatus() !== 'I') this.closeAfterDeadline();
    return refuse(new QueryDeadlineExceeded(), typeof values === 'function' ? values : callback);
  }
  const name =
    this.namesStatements && typeof config === 'string' ? statementNames.get(config) : undefined;
  const base: Record<string, unknown> =
    typeof config === 'string'
      ? name === undefined
        ? { text: config }
        : { name, text: config }
      : { ...(config as Record<string, unknown>) };
  if (budget.kind === 'bounded') base.query_timeout = budget.ms;

  const onTimeout = (error: unknown): void => {
    // By message, not instanceof: pg's errors may come from another realm (jest's sandboxes).
    if ((error as { message?: unknown } | null)?.message === QUERY_READ_TIMEOUT) {
      this.closeAfterDeadline();
    }
  };
  if (typeof values === 'function' || typeof callback === 'function') {
    const [args, done] =
      typeof values === 'function'
        ? [undefined, values as QueryCallback]
        : [values, callback as QueryCallback];
    return plainQuery.call(this, base, args, (error: Error | null, result?: unknown) => {
      if (error) onTimeout(error);
      done(error, result);
    });
  }
  const result = plainQuery.call(this, base, values) as Promise<unknown>;
  return result.catch((error: unknown) => {
    onTimeout(error);
    throw error;
  });
} as pg.Client['query'];

/**
 * The pool createDb() builds: a connection asked for inside a withQueryDeadline() scope is
 * waited for only until the scope's deadline (pg-pool's connectionTimeoutMillis is one value for
 * the whole pool). A connection that arrives after its caller gave up goes straight back.
 */
class DeadlinePool extends pg.Pool {}
// eslint-disable-next-line @typescript-eslint/unbound-method -- only ever called with .call(this)
const plainConnect = pg.Pool.prototype.connect as (this: pg.Pool, ...args: unknown[]) => unknown;
DeadlinePool.prototype.connect = function (this: pg.Pool, ...args: unknown[]): unknown {
  const deadline = currentQueryDeadline();
  if (deadline === undefined) return plainConnect.apply(this, args);
  const connecting = connectBy(this, deadline);
  const [callback] = args;
  // pool.query() asks with a callback, (error, client, release).
  if (typeof callback !== 'function') return connecting;
  type Release = (error?: Error | boolean) => void;
  const done = callback as (error: unknown, client?: pg.PoolClient, release?: Release) => void;
  connecting.then(
    (client) => {
      done(undefined, client, (error) => {
        client.release(error);
      });
    },
    (error: unknown) => {
      done(error);
    },
  );
  return undefined;
} as pg.Pool['connect'];

function connectBy(pool: pg.Pool, deadline: number): Promise<pg.PoolClient> {
  const remaining = deadline - Date.now();
  if (remaining <= 0) {
    return Promise.reject(new QueryDeadlineExceeded('no connection before the deadline'));
  }
  const connecting = plainConnect.call(pool) as Promise<pg.PoolClient>;
  return new Promise<pg.PoolClient>((resolve, reject) => {
    let gaveUp = false;
    const timer = setTimeout(() => {
      gaveUp = true;
      reject(new QueryDeadlineExceeded('no connection before the deadline'));
    }, remaining);
    connecting.then(
      (client) => {
        clearTimeout(timer);
        if (gaveUp) client.release();
        else resolve(client);
      },
      (error: unknown) => {
        clearTimeout(timer);
        // pg's own error, passed on unchanged (instanceof Error fails across jest's realms).
        // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
        if (!gaveUp) reject(error);
      },
    );
  });
}

export interface DbOptions {
  connectionString: string;
  max?: number;
  applicationName?: string;
  /** Told about connections lost outside a query (the pool replaces them); e.g. a log line. */
  onConnectionError?: (error: Error) => void;
  /**
   * Client-side bound of each query run outside a withQueryDeadline() scope (pg's
   * `query_timeout`); the connection is closed when it passes. Unset or 0: none.
   */
  queryTimeoutMs?: number;
  /**
   * Server-side `statement_timeout` sent as a start-up parameter of each connection: a second
   * line for a server that is slow but alive, for direct connections only. PgBouncer refuses the
   * parameter ("unsupported startup parameter"), and accepting it through
   * `ignore_startup_parameters` would drop it silently, so behind PgBouncer leave it unset and
   * give the role the setting (`ALTER ROLE … SET statement_timeout`, applied at each server
   * login, see docs/operations.md). Unset or 0: the server's (the role's) setting.
   */
  statementTimeoutMs?: number;
  /**
   * Send constant statements as named prepared statements (see constantStatement); default true.
   * False behind PgBouncer in transaction mode before 1.21 or without `max_prepared_statements`.
   */
  namedStatements?: boolean;
  /** How long getting a connection may take (a free one, or a new one set up); default 5 s. */
  connectionTimeoutMs?: number;
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
  queryTimeoutMs,
  statementTimeoutMs,
  namedStatements = true,
  connectionTimeoutMs = 5_000,
}: DbOptions): DbHandle {
  const config: pg.PoolConfig & { namedStatements: boolean } = {
    Client: DeadlineClient,
    // pg hands the pool's config to each client: read back by DeadlineClient's constructor.
    namedStatements,
    connectionString,
    max,
    types,
    application_name: applicationName,
    connectionTimeoutMillis: connectionTimeoutMs,
    // Read back by DeadlineClient.query, which applies it per query (0 and unset mean none).
    ...(queryTimeoutMs ? { query_timeout: queryTimeoutMs } : {}),
    ...(statementTimeoutMs ? { statement_timeout: statementTimeoutMs } : {}),
  };
  const pool = new DeadlinePool(config);
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
