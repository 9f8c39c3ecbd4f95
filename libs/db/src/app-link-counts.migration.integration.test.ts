import { sql } from 'kysely';
import { useMigrationDatabase } from './testing/migration-database';

const BEFORE = '2026-11-22T04-00-00_link-status-indexes';
const MIGRATION = '2026-11-24T00-00-00_app-link-counts';

const scratch = useMigrationDatabase();
const migrateTo = (target: string) => scratch.migrateTo(target);

async function insertApp(id: string): Promise<void> {
  await sql`INSERT INTO apps (id, name, subdomain_key) VALUES (${id}, ${id}, ${id})`.execute(
    scratch.db,
  );
}

async function insertLinks(appId: string, environment: string, count: number): Promise<void> {
  await sql`
    INSERT INTO links (id, app_id, environment, alias, web_fallback_url)
    SELECT 'lnk_' || ${appId} || ${environment} || g, ${appId}, ${environment}, 'a' || g,
           'https://example.com/'
    FROM generate_series(1, ${count}::int) AS g`.execute(scratch.db);
}

describe('the app-link-counts migration', () => {
  it('moves the counts onto the app row, keeps them by trigger, and moves them back down', async () => {
    await migrateTo(BEFORE);
    await insertApp('app_a');
    await insertApp('app_b');
    await insertApp('app_none');
    await insertLinks('app_a', 'live', 3);
    await insertLinks('app_a', 'test', 2);
    await insertLinks('app_b', 'test', 4);
    // A counter gone wrong is not carried over: the migration counts the links themselves.
    await sql`UPDATE link_totals SET total = 99 WHERE app_id = 'app_a'`.execute(scratch.db);

    await migrateTo(MIGRATION);
    const counts = async () =>
      (
        await sql<{ id: string; live: number; test: number }>`
          SELECT id, live_link_count AS live, test_link_count AS test FROM apps ORDER BY id`.execute(
          scratch.db,
        )
      ).rows;
    expect(await counts()).toEqual([
      { id: 'app_a', live: 3, test: 2 },
      { id: 'app_b', live: 0, test: 4 },
      { id: 'app_none', live: 0, test: 0 },
    ]);
    // For one release, what a gateway of the previous one reads for list totals is a view.
    const viewTotal = async (appId: string, environment: string) =>
      (
        await sql<{ total: number }>`
          SELECT total FROM link_totals WHERE app_id = ${appId} AND environment = ${environment}`.execute(
          scratch.db,
        )
      ).rows.map((row) => row.total);
    expect(await viewTotal('app_a', 'live')).toEqual([3]);
    expect(await viewTotal('app_b', 'test')).toEqual([4]);

    await insertLinks('app_none', 'live', 2);
    expect((await counts()).find((row) => row.id === 'app_none')).toEqual({
      id: 'app_none',
      live: 2,
      test: 0,
    });

    await migrateTo(BEFORE);
    const down = await sql<{ id: string; link_count: number }>`
      SELECT id, link_count FROM apps ORDER BY id`.execute(scratch.db);
    expect(down.rows).toEqual([
      { id: 'app_a', link_count: 5 },
      { id: 'app_b', link_count: 4 },
      { id: 'app_none', link_count: 2 },
    ]);
    await insertLinks('app_b', 'live', 1);
    const totals = await sql<{ app_id: string; environment: string; total: number }>`
      SELECT app_id, environment, total FROM link_totals ORDER BY app_id, environment`.execute(
      scratch.db,
    );
    expect(totals.rows).toEqual([
      { app_id: 'app_a', environment: 'live', total: 3 },
      { app_id: 'app_a', environment: 'test', total: 2 },
      { app_id: 'app_b', environment: 'live', total: 1 },
      { app_id: 'app_b', environment: 'test', total: 4 },
      { app_id: 'app_none', environment: 'live', total: 2 },
    ]);
  });
});
