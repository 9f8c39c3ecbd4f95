/**
 * The pool every service gets from createPostgres (libs/lifecycle), over a real Postgres behind a
 * FreezableProxy: what the gateway's per-request budget and the settle's scope rely on.
 */
import type { DbHandle } from '@linkservice/db';
import { createDb, QueryDeadlineExceeded, withQueryDeadline } from '@linkservice/db';
import { createLogger } from '@linkservice/logger';
import { eventually, FreezableProxy, testEnvironment } from '@linkservice/testing';
import { sql } from 'kysely';
import type { PostgresConfig } from '@linkservice/lifecycle';
import { createPostgres } from '@linkservice/lifecycle';

const logger = createLogger('lifecycle-test', 'silent');
const databaseUrl = () => testEnvironment().databaseUrl;

async function timed<T>(work: () => Promise<T>): Promise<{ outcome: unknown; elapsedMs: number }> {
  const started = Date.now();
  const outcome = await work().catch((error: unknown) => error);
  return { outcome, elapsedMs: Date.now() - started };
}

const handles: DbHandle[] = [];
function pool(config: Partial<PostgresConfig> & { DATABASE_URL: string }): DbHandle {
  const handle = createPostgres(
    {
      DATABASE_POOL_SIZE: 2,
      DATABASE_QUERY_TIMEOUT_MS: 500,
      DATABASE_STATEMENT_TIMEOUT_MS: 0,
      DATABASE_NAMED_STATEMENTS: true,
      DATABASE_CONNECT_TIMEOUT_MS: 500,
      ...config,
    },
    { applicationName: 'lifecycle-deadline-test', logger },
  );
  handles.push(handle);
  return handle;
}

let direct: DbHandle;
beforeAll(() => {
  direct = createDb({ connectionString: databaseUrl(), max: 2 });
});
afterEach(async () => {
  await Promise.all(handles.splice(0).map((handle) => handle.close()));
});
afterAll(async () => {
  await direct.close();
});

describe('createPostgres over a frozen database', () => {
  let proxy: FreezableProxy;
  beforeEach(async () => {
    const target = new URL(databaseUrl());
    proxy = await FreezableProxy.start({ host: target.hostname, port: Number(target.port) });
  });
  afterEach(async () => {
    proxy.thaw();
    await proxy.close();
  });

  it('fails a query within DATABASE_QUERY_TIMEOUT_MS and works again after the thaw', async () => {
    const { db } = pool({ DATABASE_URL: proxy.rewrite(databaseUrl()) });
    await sql`SELECT 1`.execute(db);
    proxy.freeze();

    const frozen = await timed(() => sql`SELECT 1`.execute(db));
    expect(frozen.outcome).toMatchObject({ message: 'Query read timeout' });
    // 500 ms bound; the margin only absorbs a busy test machine.
    expect(frozen.elapsedMs).toBeLessThan(1_500);

    // The next query needs a new connection (the timed-out one was closed), which cannot be set
    // up while frozen: DATABASE_CONNECT_TIMEOUT_MS bounds that.
    const connecting = await timed(() => sql`SELECT 1`.execute(db));
    expect(connecting.outcome).toBeInstanceOf(Error);
    expect(connecting.elapsedMs).toBeLessThan(1_500);

    proxy.thaw();
    await expect(sql<{ one: number }>`SELECT 1 AS one`.execute(db)).resolves.toMatchObject({
      rows: [{ one: 1 }],
    });
  });

  it('closes a connection whose query timed out mid-transaction: nothing stays open', async () => {
    const { db } = pool({ DATABASE_URL: proxy.rewrite(databaseUrl()) });
    const lockKey = Math.floor(Math.random() * 1e9);
    let pid = 0;
    const failed = db.transaction().execute(async (trx) => {
      const { rows } = await sql<{ pid: number }>`
        SELECT pg_backend_pid() AS pid, pg_advisory_xact_lock(${lockKey})`.execute(trx);
      pid = rows[0].pid;
      proxy.freeze();
      await sql`SELECT 1`.execute(trx);
    });
    await expect(failed).rejects.toThrow();
    proxy.thaw();

    // The backend that held the transaction (and its lock) is gone, not idle in transaction.
    await eventually(
      async () => {
        const { rows } = await sql<{ n: number }>`
          SELECT count(*) AS n FROM pg_stat_activity WHERE pid = ${pid}`.execute(direct.db);
        return rows[0].n === 0;
      },
      { timeoutMs: 5_000, what: 'the timed-out connection to end' },
    );
    const { rows: locked } = await sql<{ got: boolean }>`
      SELECT pg_try_advisory_lock(${lockKey}) AS got`.execute(direct.db);
    expect(locked[0].got).toBe(true);
    await sql`SELECT pg_advisory_unlock(${lockKey})`.execute(direct.db);

    // The pool serves on a new connection.
    const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db);
    expect(rows[0].pid).not.toBe(pid);
  });
});

describe('createPostgres deadline scopes on a live database', () => {
  it('a scope replaces the pool default: longer for the settle, shorter for a request', async () => {
    const { db } = pool({ DATABASE_URL: databaseUrl() });
    // 700 ms outlives the pool's 500 ms default, but not the scope's 3 s.
    await expect(
      withQueryDeadline(3_000, () => sql`SELECT pg_sleep(0.7)`.execute(db)),
    ).resolves.toBeDefined();

    const cut = await timed(() =>
      withQueryDeadline(200, () => sql`SELECT pg_sleep(2)`.execute(db)),
    );
    expect(cut.outcome).toMatchObject({ message: 'Query read timeout' });
    expect(cut.elapsedMs).toBeLessThan(1_000);
  });

  it('refuses a query whose scope deadline has passed, without sending it', async () => {
    const { db, pool: pg } = pool({ DATABASE_URL: databaseUrl() });
    await sql`SELECT 1`.execute(db);
    const refused = withQueryDeadline(0, () => sql`SELECT 1`.execute(db));
    await expect(refused).rejects.toBeInstanceOf(QueryDeadlineExceeded);
    // Outside a transaction the connection stays fine and goes back to the pool.
    expect(pg.totalCount).toBe(1);
    await sql`SELECT 1`.execute(db);
  });

  it('bounds the wait for a pool connection by the scope, not connectionTimeoutMillis', async () => {
    const { db, pool: pg } = pool({
      DATABASE_URL: databaseUrl(),
      DATABASE_POOL_SIZE: 1,
      DATABASE_CONNECT_TIMEOUT_MS: 10_000,
    });
    const held = await pg.connect();
    const waited = await timed(() => withQueryDeadline(300, () => sql`SELECT 1`.execute(db)));
    expect(waited.outcome).toBeInstanceOf(QueryDeadlineExceeded);
    expect(waited.elapsedMs).toBeLessThan(1_500);
    held.release();
    await expect(sql`SELECT 1`.execute(db)).resolves.toBeDefined();
  });

  it('sets DATABASE_STATEMENT_TIMEOUT_MS on the server as a second line', async () => {
    const { db } = pool({
      DATABASE_URL: databaseUrl(),
      DATABASE_QUERY_TIMEOUT_MS: 0,
      DATABASE_STATEMENT_TIMEOUT_MS: 300,
    });
    await expect(sql`SELECT pg_sleep(2)`.execute(db)).rejects.toMatchObject({ code: '57014' });
    // SET LOCAL (the settle, the worker) still overrides it for one transaction.
    await expect(
      db.transaction().execute(async (trx) => {
        await sql`SET LOCAL statement_timeout = 2000`.execute(trx);
        await sql`SELECT pg_sleep(0.5)`.execute(trx);
      }),
    ).resolves.toBeUndefined();
  });
});
