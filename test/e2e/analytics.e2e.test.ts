import { eventually, insertLink, sendRequest } from '@linkservice/testing';
import { LinkDimensionDaysRepository } from '@linkservice/worker';
import { sql } from 'kysely';
import { checkAnalyticsConsistency } from '../support/analytics-consistency';
import { sendApiRequest, useRunStack } from '../support/stack';
import type { Tenant } from '../support/tenants';
import { createTenant } from '../support/tenants';

/**
 * Issue 27, item 4 after load: clicks from many clients at once on the running stack, then the
 * analytics API agrees with clickCount (each link's totals are what it gained), every breakdown
 * adds up to its totals, the app's answer adds up its links', and the rollups agree table by
 * table (checkAnalyticsConsistency). Then the worker's derivation of finished days changes no
 * answer.
 */

jest.setTimeout(120_000);

const suite = useRunStack({
  env: { CLICK_FLUSH_INTERVAL_MS: '200' },
  serviceEnv: { redirect: { TRUST_FORWARDED_FOR: 'true', GEO_COUNTRY_HEADER: 'cf-ipcountry' } },
});

const AGENTS = [
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14.4; rv:125.0) Gecko/20100101 Firefox/125.0',
  'curl/8.5.0',
];
const COUNTRIES = ['DE', 'FR', 'US', 'XX'];
const GROUPS = [
  'country',
  'platform',
  'os',
  'browser',
  'referrer',
  'utmSource',
  'utmMedium',
  'utmCampaign',
  'source',
];
/** The first link's: a busy day, one the worker derives dimension rows for (DERIVE_MIN_CLICKS). */
const BUSY = 1_000;
/** Then spread over the other links. */
const CLICKS = BUSY + 300;
const LINKS = 6;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let tenant: Tenant;

function api(path: string): Promise<Json> {
  return sendApiRequest<Json>(`${suite.stack.apiUrl}${path}`, { key: tenant.live.secret }).then(
    (res) => {
      expect(res.status).toBe(200);
      return res.body as Json;
    },
  );
}

async function clickCountOf(linkId: string): Promise<number> {
  return (await api(`/links/${linkId}`)).link.clickCount as number;
}

/** Every groupBy of one answer's scope: values and rest add up to the totals. */
async function expectBreakdownsAddUp(path: string): Promise<void> {
  for (const groupBy of GROUPS) {
    const { analytics } = await api(
      `${path}${path.includes('?') ? '&' : '?'}groupBy=${groupBy}&limit=2`,
    );
    const { values, rest } = analytics.breakdown;
    const sum = (key: 'clicks' | 'botClicks') =>
      values.reduce((total: number, value: Json) => total + value[key], 0) + rest[key];
    expect([groupBy, sum('clicks'), sum('botClicks')]).toEqual([
      groupBy,
      analytics.totals.clicks,
      analytics.totals.botClicks,
    ]);
  }
}

beforeAll(async () => {
  tenant = await createTenant(suite.postgres.db);
});

it('agrees with clickCount, adds up in every breakdown, and is consistent table by table', async () => {
  const { stack, postgres } = suite;
  const links = await Promise.all(
    Array.from({ length: LINKS }, () => insertLink(postgres.db, { appId: tenant.appId })),
  );
  const click = (i: number) =>
    sendRequest(
      `${stack.redirect.url}/${links[i < BUSY ? 0 : 1 + (i % (LINKS - 1))].alias}` +
        // One click in four a QR code's scan (the scan marker, anywhere in the query).
        `?utm_source=s${i % 3}${i % 4 === 0 ? '&qr=1' : ''}&utm_campaign=c${i % 7}`,
      {
        host: `${tenant.subdomainKey}.${stack.linkDomain}`,
        headers: {
          // Every link sees every agent, the bot's included.
          'user-agent': AGENTS[Math.floor(i / LINKS) % AGENTS.length],
          'x-forwarded-for': `203.0.113.${i % 50}`,
          'cf-ipcountry': COUNTRIES[i % COUNTRIES.length],
          ...(i % 5 === 0 ? { referer: `https://site${i % 4}.example/page` } : {}),
        },
      },
    );
  for (let start = 0; start < CLICKS; start += 325) {
    const answers = await Promise.all(
      Array.from({ length: Math.min(325, CLICKS - start) }, (_, i) => click(start + i)),
    );
    expect(answers.every((answer) => answer.status === 302)).toBe(true);
  }
  await eventually(
    async () => {
      const counts = await Promise.all(links.map((link) => clickCountOf(link.id)));
      return counts.reduce((a, b) => a + b, 0) === CLICKS || undefined;
    },
    { timeoutMs: 15_000, what: 'every click in clickCount' },
  );

  const from = new Date(Date.now() - 86_400_000).toISOString();
  const range = `from=${encodeURIComponent(from)}`;
  let linkClicks = 0;
  let linkUniques = 0;
  for (const link of links) {
    const { analytics } = await api(`/links/${link.id}/analytics?${range}`);
    const clickCount = await clickCountOf(link.id);
    expect(analytics.totals.clicks + analytics.totals.botClicks).toBe(clickCount);
    expect(analytics.totals.botClicks).toBeGreaterThan(0);
    linkClicks += clickCount;
    linkUniques += analytics.totals.uniqueVisitors as number;
    await expectBreakdownsAddUp(`/links/${link.id}/analytics?${range}`);
    // By the hour, the same clicks.
    const hourly = (await api(`/links/${link.id}/analytics?${range}&interval=hour`)).analytics;
    expect(hourly.totals.clicks + hourly.totals.botClicks).toBe(clickCount);
  }
  const app = (await api(`/analytics?${range}&limit=${LINKS}`)).analytics;
  expect(app.totals.clicks + app.totals.botClicks).toBe(linkClicks);
  expect(app.totals.uniqueVisitors).toBe(linkUniques);
  expect(app.topLinks).toHaveLength(LINKS);
  await expectBreakdownsAddUp(`/analytics?${range}`);
  // Scans and taps, each counted once: every fourth click was a scan.
  const bySource = (await api(`/analytics?${range}&groupBy=source`)).analytics.breakdown.values;
  const sourceTotal = (value: string) =>
    bySource
      .filter((row: Json) => row.value === value)
      .reduce((total: number, row: Json) => total + row.clicks + row.botClicks, 0);
  expect([sourceTotal('qr'), sourceTotal('link')]).toEqual([
    Math.ceil(CLICKS / 4),
    CLICKS - Math.ceil(CLICKS / 4),
  ]);
  const scans = (await api(`/analytics?${range}&source=qr`)).analytics;
  expect(scans.totals.clicks + scans.totals.botClicks).toBe(Math.ceil(CLICKS / 4));

  const consistency = await checkAnalyticsConsistency(postgres.db, { appId: tenant.appId });
  expect(consistency.problems).toEqual([]);
  expect(consistency.analyticsTotal).toBe(CLICKS);

  // The worker's derivation of finished days (moved here to yesterday) changes no answer.
  const days = `from=${new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10)}`;
  const breakdownOf = async () =>
    (await api(`/links/${links[0].id}/analytics?${days}&groupBy=country`)).analytics.breakdown;
  const before = await breakdownOf();
  await sql`
    UPDATE link_click_days SET day = day - 1 WHERE app_id = ${tenant.appId}`.execute(postgres.db);
  for (const table of ['click_rollup_days', 'click_dimension_days']) {
    await sql`UPDATE ${sql.table(table)} SET day = day - 1 WHERE app_id = ${tenant.appId}`.execute(
      postgres.db,
    );
  }
  expect(await breakdownOf()).toEqual(before);
  const flags = () =>
    sql<{ derived: boolean }>`
    SELECT dimensions_derived AS derived FROM link_click_days
    WHERE app_id = ${tenant.appId} AND link_id = ${links[0].id}`.execute(postgres.db);
  expect((await flags()).rows).toEqual([{ derived: false }]);
  // The stack's worker derives finished days too: a row it holds locked is skipped here (SKIP
  // LOCKED) until its transaction commits, so derive again until the flag is seen.
  await eventually(
    async () => {
      while ((await new LinkDimensionDaysRepository(postgres.db).deriveSlice(500)) > 0);
      return (await flags()).rows[0]?.derived === true || undefined;
    },
    { what: "the link's day derived" },
  );
  expect((await flags()).rows).toEqual([{ derived: true }]);
  expect(await breakdownOf()).toEqual(before);
});
