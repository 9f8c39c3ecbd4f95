import type { DbHandle } from '@linkservice/db';
import { createTenant, insertLink, testDatabase } from '@linkservice/testing';
import { sql } from 'kysely';
import { DERIVE_MIN_CLICKS, LinkDimensionDaysRepository } from './link-dimension-days.repository';

let postgres: DbHandle;
beforeAll(() => {
  postgres = testDatabase(4);
});
afterAll(async () => {
  await postgres.close();
});

const DIMENSIONS = {
  platform: 'ios',
  os: 'ios',
  browser: 'safari',
  referrer: 'direct',
  utm_source: 'none',
  utm_medium: 'none',
  utm_campaign: 'none',
};

/** What the flusher writes for `clicks` of a link on `day` in `country` (the link's rows). */
async function flushed(
  tenant: { appId: string },
  linkId: string,
  day: string,
  country: string,
  clicks: number,
  source = 'link',
) {
  const { db } = postgres;
  await db
    .insertInto('click_rollup_days')
    .values({
      app_id: tenant.appId,
      environment: 'live',
      link_id: linkId,
      day,
      country,
      ...DIMENSIONS,
      source,
      clicks,
      bot_clicks: 0,
    })
    .onConflict((oc) =>
      oc
        .columns([
          'app_id',
          'environment',
          'link_id',
          'day',
          'country',
          'platform',
          'os',
          'browser',
          'referrer',
          'utm_source',
          'utm_medium',
          'utm_campaign',
          'source',
        ])
        .doUpdateSet({ clicks: sql`click_rollup_days.clicks + ${clicks}` }),
    )
    .execute();
  await sql`
    INSERT INTO link_click_days (app_id, environment, link_id, day, clicks)
    VALUES (${tenant.appId}, 'live', ${linkId}, ${day}, ${clicks})
    ON CONFLICT (app_id, environment, link_id, day) DO UPDATE
    SET clicks = link_click_days.clicks + EXCLUDED.clicks, dimensions_derived = false`.execute(db);
}

async function countries(appId: string, linkId: string, day: string) {
  const result = await sql<{ value: string; clicks: number }>`
    SELECT value, clicks FROM click_dimension_days
    WHERE app_id = ${appId} AND environment = 'live' AND link_id = ${linkId} AND day = ${day}
      AND dimension = 'country'
    ORDER BY value`.execute(postgres.db);
  return result.rows;
}

function utcDay(offsetDays: number): string {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

describe('LinkDimensionDaysRepository', () => {
  it('derives finished days of links from their rollups, again after a late click, never today', async () => {
    const tenant = await createTenant(postgres.db);
    const link = await insertLink(postgres.db, tenant);
    const [yesterday, today] = [utcDay(-1), utcDay(0)];
    await flushed(tenant, link.id, yesterday, 'DE', 3_000);
    await flushed(tenant, link.id, yesterday, 'FR', 2_000, 'qr');
    await flushed(tenant, link.id, today, 'DE', 7_000);
    // A quiet day: read from its combinations, never derived.
    const quiet = await insertLink(postgres.db, tenant);
    await flushed(tenant, quiet.id, yesterday, 'DE', DERIVE_MIN_CLICKS - 1);
    const repository = new LinkDimensionDaysRepository(postgres.db);

    // Other tests' link-days may be due too: derive until none is left.
    while ((await repository.deriveSlice(100)) > 0);
    expect(await countries(tenant.appId, link.id, yesterday)).toEqual([
      { value: 'DE', clicks: 3_000 },
      { value: 'FR', clicks: 2_000 },
    ]);
    expect(await countries(tenant.appId, link.id, today)).toEqual([]);
    expect(await countries(tenant.appId, quiet.id, yesterday)).toEqual([]);
    const platforms = await sql<{ value: string; clicks: number }>`
      SELECT value, clicks FROM click_dimension_days
      WHERE app_id = ${tenant.appId} AND link_id = ${link.id} AND dimension = 'platform'`.execute(
      postgres.db,
    );
    expect(platforms.rows).toEqual([{ value: 'ios', clicks: 5_000 }]);
    const sources = await sql<{ value: string; clicks: number }>`
      SELECT value, clicks FROM click_dimension_days
      WHERE app_id = ${tenant.appId} AND link_id = ${link.id} AND dimension = 'source'
      ORDER BY value`.execute(postgres.db);
    expect(sources.rows).toEqual([
      { value: 'link', clicks: 3_000 },
      { value: 'qr', clicks: 2_000 },
    ]);

    // A late click of yesterday (a recovered batch): the day is derived again, with it.
    await flushed(tenant, link.id, yesterday, 'DE', 1);
    const flags = await sql<{ dimensions_derived: boolean }>`
      SELECT dimensions_derived FROM link_click_days
      WHERE app_id = ${tenant.appId} AND link_id = ${link.id} AND day = ${yesterday}`.execute(
      postgres.db,
    );
    expect(flags.rows).toEqual([{ dimensions_derived: false }]);
    while ((await repository.deriveSlice(100)) > 0);
    expect(await countries(tenant.appId, link.id, yesterday)).toEqual([
      { value: 'DE', clicks: 3_001 },
      { value: 'FR', clicks: 2_000 },
    ]);
  });

  it('lets two workers share the work without deriving a link-day twice at once', async () => {
    const tenant = await createTenant(postgres.db);
    const links = await Promise.all(
      Array.from({ length: 20 }, () => insertLink(postgres.db, tenant)),
    );
    for (const link of links) await flushed(tenant, link.id, utcDay(-2), 'US', DERIVE_MIN_CLICKS);
    const [a, b] = [
      new LinkDimensionDaysRepository(postgres.db),
      new LinkDimensionDaysRepository(postgres.db),
    ];
    const drain = async (repository: LinkDimensionDaysRepository) => {
      while ((await repository.deriveSlice(3)) > 0);
    };
    await Promise.all([drain(a), drain(b)]);
    const derived = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM click_dimension_days
      WHERE app_id = ${tenant.appId} AND dimension = 'country' AND value = 'US' AND clicks = ${DERIVE_MIN_CLICKS}`.execute(
      postgres.db,
    );
    expect(derived.rows[0].count).toBe(20);
  });
});
