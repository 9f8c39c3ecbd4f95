import { sql } from 'kysely';
import { useMigrationDatabase } from './testing/migration-database';

const BEFORE = '2026-11-30T00-00-00_webhooks';
const MIGRATION = '2026-12-01T00-00-00_click-source';

const scratch = useMigrationDatabase();
const migrateTo = (target: string) => scratch.migrateTo(target);

const DIMENSIONS = sql.raw(
  'country, platform, os, browser, referrer, utm_source, utm_medium, utm_campaign',
);

/** A click_rollup_days row in the previous release's shape, as its flusher upserts it. */
function previousReleaseUpsert(day: string, clicks: number) {
  return sql`
    INSERT INTO click_rollup_days AS t (app_id, environment, link_id, day, ${DIMENSIONS}, clicks,
      bot_clicks)
    VALUES ('app_a', 'live', 'lnk_1', ${day}::date, 'DE', 'ios', 'ios', 'safari', 'direct',
      'none', 'none', 'none', ${clicks}, 0)
    ON CONFLICT (app_id, environment, link_id, day, ${DIMENSIONS})
    DO UPDATE SET clicks = t.clicks + EXCLUDED.clicks`;
}

/** Each partition of `parent` (and the parent) with its primary key's definition. */
async function primaryKeys(parent: string): Promise<Record<string, string>> {
  const rows = await sql<{ table: string; definition: string }>`
    SELECT c.relname AS table, pg_get_indexdef(i.indexrelid) AS definition
    FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
    WHERE i.indisprimary AND (c.relname = ${parent} OR c.oid IN (
      SELECT inhrelid FROM pg_inherits WHERE inhparent = ${parent}::regclass))
    ORDER BY 1`.execute(scratch.db);
  return Object.fromEntries(
    rows.rows.map((row) => [row.table, row.definition.replace(/^.* USING btree /, '')]),
  );
}

async function rollupDays() {
  // to_jsonb: the source column exists only between up and down.
  const rows = await sql<{ d: string; s: string | null; c: number }>`
    SELECT to_char(t.day, 'YYYY-MM-DD') AS d, to_jsonb(t) ->> 'source' AS s, t.clicks::int AS c
    FROM click_rollup_days t ORDER BY t.day, t.clicks`.execute(scratch.db);
  return rows.rows.map((row) => ({ day: row.d, source: row.s ?? undefined, clicks: row.c }));
}

describe('the click-source migration', () => {
  it('adds source to the rollups and their keys on every partition, and dimension rows; down folds scans into taps', async () => {
    await migrateTo(BEFORE);
    await sql`
      CREATE TABLE click_rollup_days_2026_11 PARTITION OF click_rollup_days
      FOR VALUES FROM ('2026-11-01') TO ('2026-12-01')`.execute(scratch.db);
    await previousReleaseUpsert('2026-11-20', 3).execute(scratch.db);
    await previousReleaseUpsert('2027-01-05', 4).execute(scratch.db);
    await sql`
      INSERT INTO click_rollup_hours (app_id, environment, link_id, hour, ${DIMENSIONS}, clicks)
      VALUES ('app_a', 'live', '', '2026-11-20T10:00:00Z', 'DE', 'ios', 'ios', 'safari',
        'direct', 'none', 'none', 'none', 3)`.execute(scratch.db);
    await sql`
      INSERT INTO click_dimension_days (app_id, environment, link_id, day, dimension, value,
        clicks, bot_clicks)
      VALUES ('app_a', 'live', '', '2026-11-20', 'platform', 'ios', 2, 1),
        ('app_a', 'live', '', '2026-11-20', 'platform', 'android', 5, 0),
        ('app_a', 'live', '', '2026-11-20', 'country', 'DE', 7, 1),
        ('app_a', 'live', 'lnk_1', '2026-11-21', 'platform', 'ios', 4, 2)`.execute(scratch.db);

    await migrateTo(MIGRATION);
    const key = (bucket: string) =>
      `(app_id, environment, link_id, ${bucket}, country, platform, os, browser, referrer, utm_source, utm_medium, utm_campaign, source)`;
    expect(await primaryKeys('click_rollup_days')).toEqual({
      click_rollup_days: key('day'),
      click_rollup_days_2026_11: key('day'),
      click_rollup_days_default: key('day'),
    });
    expect(await primaryKeys('click_rollup_hours')).toEqual({
      click_rollup_hours: key('hour'),
      click_rollup_hours_default: key('hour'),
    });
    // Every row so far is a tap of the link.
    expect(await rollupDays()).toEqual([
      { day: '2026-11-20', source: 'link', clicks: 3 },
      { day: '2027-01-05', source: 'link', clicks: 4 },
    ]);
    const hours = await sql<{ source: string }>`SELECT source FROM click_rollup_hours`.execute(
      scratch.db,
    );
    expect(hours.rows).toEqual([{ source: 'link' }]);
    // Each scope-day's clicks as source 'link'.
    const sources = await sql<{ link_id: string; day: string; value: string; clicks: number }>`
      SELECT link_id, to_char(day, 'YYYY-MM-DD') AS day, value, clicks::int, bot_clicks::int
      FROM click_dimension_days WHERE dimension = 'source' ORDER BY link_id`.execute(scratch.db);
    expect(sources.rows).toEqual([
      { link_id: '', day: '2026-11-20', value: 'link', clicks: 7, bot_clicks: 1 },
      { link_id: 'lnk_1', day: '2026-11-21', value: 'link', clicks: 4, bot_clicks: 2 },
    ]);

    // A flusher of the previous release: its upsert matches no unique index any more, so its
    // statement fails as a whole (its batches wait in Redis for the new release).
    await expect(previousReleaseUpsert('2026-11-20', 1).execute(scratch.db)).rejects.toThrow(
      /no unique or exclusion constraint matching the ON CONFLICT specification/,
    );
    // A scan beside a tap of the same combination: a row of its own.
    await sql`
      INSERT INTO click_rollup_days (app_id, environment, link_id, day, ${DIMENSIONS}, source,
        clicks)
      VALUES ('app_a', 'live', 'lnk_1', '2026-11-20', 'DE', 'ios', 'ios', 'safari', 'direct',
        'none', 'none', 'none', 'qr', 2)`.execute(scratch.db);
    expect(await rollupDays()).toEqual([
      { day: '2026-11-20', source: 'qr', clicks: 2 },
      { day: '2026-11-20', source: 'link', clicks: 3 },
      { day: '2027-01-05', source: 'link', clicks: 4 },
    ]);

    await migrateTo(BEFORE);
    expect(await rollupDays()).toEqual([
      { day: '2026-11-20', source: undefined, clicks: 5 },
      { day: '2027-01-05', source: undefined, clicks: 4 },
    ]);
    const dimensions = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM click_dimension_days WHERE dimension = 'source'`.execute(
      scratch.db,
    );
    expect(dimensions.rows[0].n).toBe(0);
    // The previous release's upsert works again.
    await previousReleaseUpsert('2026-11-20', 1).execute(scratch.db);
    expect((await rollupDays())[0]).toEqual({ day: '2026-11-20', source: undefined, clicks: 6 });
  });
});
