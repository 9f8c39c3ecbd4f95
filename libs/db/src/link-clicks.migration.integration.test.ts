import { sql } from 'kysely';
import { useMigrationDatabase } from './testing/migration-database';

const BEFORE = '2026-11-27T00-00-00_idempotency-keys';
const MIGRATION = '2026-11-28T00-00-00_link-clicks';

const scratch = useMigrationDatabase();
const migrateTo = (target: string) => scratch.migrateTo(target);

/** Links lnk_1..lnk_<n> of one app, live, link i clicked clicks(i) times (before the move). */
async function insertLinks(count: number, clicks: (i: number) => number): Promise<void> {
  await sql`INSERT INTO apps (id, name, subdomain_key) VALUES ('app_a', 'a', 'a')`.execute(
    scratch.db,
  );
  for (let i = 1; i <= count; i++) {
    await sql`
      INSERT INTO links (id, app_id, environment, alias, web_fallback_url, click_count)
      VALUES (${`lnk_${i}`}, 'app_a', 'live', ${`a${i}`}, 'https://example.com/', ${clicks(i)})`.execute(
      scratch.db,
    );
  }
}

async function counts(): Promise<Record<string, number>> {
  const rows = await sql<{ link_id: string; click_count: number }>`
    SELECT link_id, click_count FROM link_clicks ORDER BY link_id`.execute(scratch.db);
  return Object.fromEntries(rows.rows.map((row) => [row.link_id, row.click_count]));
}

async function columnCounts(): Promise<Record<string, number>> {
  const rows = await sql<{ id: string; click_count: number }>`
    SELECT id, click_count FROM links ORDER BY id`.execute(scratch.db);
  return Object.fromEntries(rows.rows.map((row) => [row.id, row.click_count]));
}

async function indexesOf(table: string): Promise<string[]> {
  const rows = await sql<{ indexname: string }>`
    SELECT indexname FROM pg_indexes WHERE tablename = ${table} ORDER BY indexname`.execute(
    scratch.db,
  );
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
      scratch.db,
    );
    // Other edits of a link leave the counts alone.
    await sql`UPDATE links SET title = 'edited' WHERE id = 'lnk_4'`.execute(scratch.db);
    expect(await counts()).toEqual({ lnk_2: 10, lnk_3: 3, lnk_4: 2 });

    // This release's flusher writes link_clicks only.
    await sql`
      INSERT INTO link_clicks (link_id, app_id, environment, click_count)
      VALUES ('lnk_1', 'app_a', 'live', 5), ('lnk_4', 'app_a', 'live', 1)
      ON CONFLICT (link_id)
      DO UPDATE SET click_count = link_clicks.click_count + EXCLUDED.click_count`.execute(
      scratch.db,
    );

    await migrateTo(BEFORE);
    expect(await columnCounts()).toEqual({ lnk_1: 5, lnk_2: 10, lnk_3: 3, lnk_4: 3 });
    expect(await indexesOf('links')).toContain('links_clicks_idx');
    expect(await indexesOf('links')).not.toContain('links_app_id_order_idx');
    const table = await sql<{ name: string | null }>`
      SELECT to_regclass('link_clicks')::text AS name`.execute(scratch.db);
    expect(table.rows).toEqual([{ name: null }]);
  });
});
