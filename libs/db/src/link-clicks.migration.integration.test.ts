import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { ensureDatabase } from './migrate';
import { createDb } from './pool';
import type { DbHandle } from './pool';
import { migrations } from './migrations';

// libs/testing depends on this package, so read the per-run database its global setup exported.
const runDatabaseUrl = process.env.DATABASE_URL!;

const BEFORE = '2026-11-27T00-00-00_idempotency-keys';
const MIGRATION = '2026-11-28T00-00-00_link-clicks';

/** The migration's schemas are not the app's Database type: read them untyped. */
type Untyped = Kysely<Record<string, Record<string, unknown>>>;

let url: string;
let handle: DbHandle;
let db: Untyped;
let migrator: Migrator;

beforeAll(async () => {
  // A database of its own: this test migrates down and up, which the shared one must not see.
  const server = new URL(runDatabaseUrl);
  server.pathname = `${server.pathname}_mig_${randomBytes(3).toString('hex')}`;
  url = server.toString();
  await ensureDatabase(url);
  handle = createDb({ connectionString: url, max: 2 });
  db = handle.db as unknown as Untyped;
  migrator = new Migrator({ db, provider: { getMigrations: () => Promise.resolve(migrations) } });
});

afterAll(async () => {
  await handle.close();
  const admin = new URL(url);
  const name = decodeURIComponent(admin.pathname.replace(/^\//, ''));
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
});

async function migrateTo(target: string): Promise<void> {
  const { error } = await migrator.migrateTo(target);
  if (error) throw error instanceof Error ? error : new Error('migration failed', { cause: error });
}

/** Links lnk_1..lnk_<n> of one app, live, link i clicked clicks(i) times (before the move). */
async function insertLinks(count: number, clicks: (i: number) => number): Promise<void> {
  await sql`INSERT INTO apps (id, name, subdomain_key) VALUES ('app_a', 'a', 'a')`.execute(db);
  for (let i = 1; i <= count; i++) {
    await sql`
      INSERT INTO links (id, app_id, environment, alias, web_fallback_url, click_count)
      VALUES (${`lnk_${i}`}, 'app_a', 'live', ${`a${i}`}, 'https://example.com/', ${clicks(i)})`.execute(
      db,
    );
  }
}

async function counts(): Promise<Record<string, number>> {
  const rows = await sql<{ link_id: string; click_count: number }>`
    SELECT link_id, click_count FROM link_clicks ORDER BY link_id`.execute(db);
  return Object.fromEntries(rows.rows.map((row) => [row.link_id, row.click_count]));
}

async function columnCounts(): Promise<Record<string, number>> {
  const rows = await sql<{ id: string; click_count: number }>`
    SELECT id, click_count FROM links ORDER BY id`.execute(db);
  return Object.fromEntries(rows.rows.map((row) => [row.id, row.click_count]));
}

async function indexesOf(table: string): Promise<string[]> {
  const rows = await sql<{ indexname: string }>`
    SELECT indexname FROM pg_indexes WHERE tablename = ${table} ORDER BY indexname`.execute(db);
  return rows.rows.map((row) => row.indexname);
}

describe('the link-clicks migration', () => {
  it('moves the counts into link_clicks, forwards the previous release flushes, and moves them back down', async () => {
    await migrateTo(BEFORE);
    await insertLinks(4, (i) => [0, 7, 0, 2][i - 1]);

    await migrateTo(MIGRATION);
    // Only clicked links have a row.
    expect(await counts()).toEqual({ lnk_2: 7, lnk_4: 2 });
    expect(await indexesOf('links')).toContain('links_app_id_order_idx');
    expect(await indexesOf('links')).not.toContain('links_clicks_idx');
    expect(await indexesOf('link_clicks')).toEqual(['link_clicks_order_idx', 'link_clicks_pkey']);

    // A flusher of the previous release still adds to links.click_count: the trigger forwards
    // the increment, for a link with a row and for one without.
    await sql`UPDATE links SET click_count = click_count + 3 WHERE id IN ('lnk_2', 'lnk_3')`.execute(
      db,
    );
    // Other edits of a link leave the counts alone.
    await sql`UPDATE links SET title = 'edited' WHERE id = 'lnk_4'`.execute(db);
    expect(await counts()).toEqual({ lnk_2: 10, lnk_3: 3, lnk_4: 2 });

    // This release's flusher writes link_clicks only.
    await sql`
      INSERT INTO link_clicks (link_id, app_id, environment, click_count)
      VALUES ('lnk_1', 'app_a', 'live', 5), ('lnk_4', 'app_a', 'live', 1)
      ON CONFLICT (link_id)
      DO UPDATE SET click_count = link_clicks.click_count + EXCLUDED.click_count`.execute(db);

    await migrateTo(BEFORE);
    expect(await columnCounts()).toEqual({ lnk_1: 5, lnk_2: 10, lnk_3: 3, lnk_4: 3 });
    expect(await indexesOf('links')).toContain('links_clicks_idx');
    expect(await indexesOf('links')).not.toContain('links_app_id_order_idx');
    const table = await sql<{ name: string | null }>`
      SELECT to_regclass('link_clicks')::text AS name`.execute(db);
    expect(table.rows).toEqual([{ name: null }]);
  });
});
