import { randomUUID } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { ClickBatchesRepository, encodeDimensions } from '@linkservice/redirect';
import { createTenant, insertLink, testDatabase } from '@linkservice/testing';
import { sql } from 'kysely';
import { checkAnalyticsConsistency } from './analytics-consistency';

/**
 * The consistency checker against batches applied by the link host's own flush statement: it
 * finds them consistent, reports their figures, and names each kind of disagreement once a row
 * is changed behind the flusher's back (so a tier that relies on it cannot pass vacuously).
 */

let postgres: DbHandle;
beforeAll(() => {
  postgres = testDatabase(2);
});
afterAll(async () => {
  await postgres.close();
});

const HOUR = Math.floor(Date.UTC(2026, 10, 30, 23) / 3_600_000);
const person = (hour: number, country: string, referrer: string, source = 'link') =>
  encodeDimensions(hour, false, {
    country,
    platform: 'ios',
    os: 'ios',
    browser: 'safari',
    referrer,
    utm_source: 'news',
    utm_medium: 'none',
    utm_campaign: 'none',
    source,
  });
const bot = (hour: number) =>
  encodeDimensions(hour, true, {
    country: 'unknown',
    platform: 'other',
    os: 'other',
    browser: 'other',
    referrer: 'direct',
    utm_source: 'none',
    utm_medium: 'none',
    utm_campaign: 'none',
    source: 'link',
  });

async function clickedApp() {
  const { db } = postgres;
  const tenant = await createTenant(db);
  // One link with clicks before the measured range (a baseline), one without.
  const first = await insertLink(db, tenant, { click_count: 7 });
  const second = await insertLink(db, tenant);
  const batches = new ClickBatchesRepository(db);
  // Across midnight and a month's end: hours fold into two days and two months.
  await batches.apply([
    {
      id: randomUUID(),
      counts: new Map([
        [first.id, 4],
        [first.id + person(HOUR, 'DE', 'ref.example'), 2],
        [first.id + person(HOUR + 1, 'FR', 'direct', 'qr'), 1],
        [first.id + bot(HOUR + 1), 1],
        [second.id, 2],
        [second.id + person(HOUR, 'DE', 'direct'), 2],
      ]),
    },
  ]);
  return { tenant, first, second, baseline: new Map([[first.id, 7]]) };
}

describe('checkAnalyticsConsistency', () => {
  it('finds the flush statement’s rows consistent and reports their figures', async () => {
    const { tenant, first, second, baseline } = await clickedApp();
    const result = await checkAnalyticsConsistency(postgres.db, {
      appId: tenant.appId,
      linkIds: [first.id, second.id],
      baseline,
    });
    expect(result.problems).toEqual([]);
    expect(
      result.links.map(({ linkId, clickCount, gained, days, hours, months }) => ({
        linkId,
        clickCount,
        gained,
        days,
        hours,
        months,
      })),
    ).toEqual([
      {
        linkId: first.id,
        clickCount: 11,
        gained: 4,
        days: { people: 3, bots: 1 },
        hours: { people: 3, bots: 1 },
        months: { people: 3, bots: 1 },
      },
      {
        linkId: second.id,
        clickCount: 2,
        gained: 2,
        days: { people: 2, bots: 0 },
        hours: { people: 2, bots: 0 },
        months: { people: 2, bots: 0 },
      },
    ]);
    expect(result.app.days).toEqual({ people: 5, bots: 1 });
    expect(result.clickCountGained).toBe(6);
    expect(result.analyticsTotal).toBe(6);
    expect(result.breakdownsChecked).toBeGreaterThan(0);
  });

  it('names every disagreement: a clickCount without analytics, a rollup row changed, an app row off', async () => {
    const { tenant, first, second, baseline } = await clickedApp();
    const { db } = postgres;
    const check = () =>
      checkAnalyticsConsistency(db, { appId: tenant.appId, baseline }).then((r) => r.problems);

    // Without the baseline, the earlier 7 clicks have no analytics.
    const unbased = await checkAnalyticsConsistency(db, { appId: tenant.appId });
    expect(unbased.problems).toContainEqual(
      `link ${first.id}: days hold 3+1 bots, clickCount gained 11`,
    );

    await db
      .updateTable('link_clicks')
      .set((eb) => ({ click_count: eb('click_count', '+', 1) }))
      .where('link_id', '=', second.id)
      .execute();
    expect(await check()).toContainEqual(
      `link ${second.id}: hours hold 2+0 bots, clickCount gained 3`,
    );

    await sql`UPDATE click_rollup_hours SET clicks = clicks + 1
      WHERE app_id = ${tenant.appId} AND link_id = ${first.id} AND country = 'FR'`.execute(db);
    const problems = await check();
    expect(problems.some((p) => p.startsWith('hours (per UTC day) vs days at'))).toBe(true);
    expect(
      problems.some((p) => p.startsWith('click_rollup_hours: app row vs sum of its links')),
    ).toBe(true);

    await sql`UPDATE click_rollup_days SET referrer = 'elsewhere'
      WHERE app_id = ${tenant.appId} AND link_id = '' AND referrer = 'ref.example'`.execute(db);
    expect(
      (await check()).some((p) =>
        p.startsWith('click_dimension_days referrer vs click_rollup_days'),
      ),
    ).toBe(true);
    await sql`UPDATE click_dimension_days SET clicks = clicks + 1
      WHERE app_id = ${tenant.appId} AND link_id = '' AND dimension = 'country' AND value = 'DE'`.execute(
      db,
    );
    expect(
      (await check()).some((p) =>
        p.startsWith('click_dimension_days country vs click_rollup_days'),
      ),
    ).toBe(true);
    await sql`UPDATE click_rollup_days SET source = 'link'
      WHERE app_id = ${tenant.appId} AND link_id = '' AND source = 'qr'`.execute(db);
    expect(
      (await check()).some((p) => p.startsWith('click_dimension_days source vs click_rollup_days')),
    ).toBe(true);

    await sql`UPDATE link_click_months SET bot_clicks = bot_clicks + 1
      WHERE app_id = ${tenant.appId} AND link_id = ''`.execute(db);
    expect(
      (await check()).some((p) => p.startsWith('link_click_months: app row vs sum of its links')),
    ).toBe(true);
  });
});
