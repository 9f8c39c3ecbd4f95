import type { Environment } from '@linkservice/db';
import type { Tenant } from '@linkservice/testing';
import { createTenant, insertLink } from '@linkservice/testing';
import { sql } from 'kysely';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';
import type { AnalyticsScope } from './analytics.repository';
import { AnalyticsReader } from './analytics.repository';
import { topLinksOfApp } from './top-links';

const DOMAIN = 'go.example.test';
const NOT_FOUND = { error: 'not_found', message: 'No such link.' };
const DAY = 86_400_000;

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startGateway({ env: { LINK_DOMAIN: DOMAIN } });
});
afterAll(async () => {
  await gateway.stop();
});

interface Click {
  /** An instant in the hour and day counted. */
  at: Date;
  country?: string;
  platform?: string;
  os?: string;
  browser?: string;
  referrer?: string;
  utm_source?: string;
  /** `link` (default) or `qr`. */
  source?: string;
  clicks?: number;
  bot_clicks?: number;
  /** The link's unique visitors that day so far. */
  visitors?: number;
}

/**
 * Rollup rows as the redirect's flusher leaves them (click-batches.repository.ts), for the link
 * and its app, and its dimension rows as the worker derives them when `derived`.
 */
async function seedClicks(
  tenant: Tenant,
  linkId: string,
  clicks: readonly Click[],
  { environment = 'live', derived = false }: { environment?: Environment; derived?: boolean } = {},
): Promise<void> {
  const db = gateway.deps.db;
  for (const click of clicks) {
    const values = {
      country: click.country ?? 'US',
      platform: click.platform ?? 'ios',
      os: click.os ?? 'ios',
      browser: click.browser ?? 'safari',
      referrer: click.referrer ?? 'direct',
      utm_source: click.utm_source ?? 'none',
      utm_medium: 'none',
      utm_campaign: 'none',
      source: click.source ?? 'link',
    };
    const people = click.clicks ?? 1;
    const bots = click.bot_clicks ?? 0;
    const hour = new Date(Math.floor(click.at.getTime() / 3_600_000) * 3_600_000);
    const day = click.at.toISOString().slice(0, 10);
    const month = `${day.slice(0, 7)}-01`;
    for (const scope of [linkId, '']) {
      const key = { app_id: tenant.appId, environment, link_id: scope, ...values };
      await sql`
        INSERT INTO click_rollup_hours (app_id, environment, link_id, hour, country, platform, os,
          browser, referrer, utm_source, utm_medium, utm_campaign, source, clicks, bot_clicks)
        VALUES (${key.app_id}, ${environment}, ${scope}, ${hour}, ${values.country},
          ${values.platform}, ${values.os}, ${values.browser}, ${values.referrer},
          ${values.utm_source}, 'none', 'none', ${values.source}, ${people}, ${bots})
        ON CONFLICT (app_id, environment, link_id, hour, country, platform, os, browser, referrer,
          utm_source, utm_medium, utm_campaign, source)
        DO UPDATE SET clicks = click_rollup_hours.clicks + EXCLUDED.clicks,
          bot_clicks = click_rollup_hours.bot_clicks + EXCLUDED.bot_clicks`.execute(db);
      await sql`
        INSERT INTO click_rollup_days (app_id, environment, link_id, day, country, platform, os,
          browser, referrer, utm_source, utm_medium, utm_campaign, source, clicks, bot_clicks)
        VALUES (${key.app_id}, ${environment}, ${scope}, ${day}, ${values.country},
          ${values.platform}, ${values.os}, ${values.browser}, ${values.referrer},
          ${values.utm_source}, 'none', 'none', ${values.source}, ${people}, ${bots})
        ON CONFLICT (app_id, environment, link_id, day, country, platform, os, browser, referrer,
          utm_source, utm_medium, utm_campaign, source)
        DO UPDATE SET clicks = click_rollup_days.clicks + EXCLUDED.clicks,
          bot_clicks = click_rollup_days.bot_clicks + EXCLUDED.bot_clicks`.execute(db);
      await sql`
        INSERT INTO link_click_days (app_id, environment, link_id, day, clicks, bot_clicks,
          unique_visitors)
        VALUES (${tenant.appId}, ${environment}, ${scope}, ${day}, ${people}, ${bots},
          ${scope === '' ? 0 : (click.visitors ?? 0)})
        ON CONFLICT (app_id, environment, link_id, day)
        DO UPDATE SET clicks = link_click_days.clicks + EXCLUDED.clicks,
          bot_clicks = link_click_days.bot_clicks + EXCLUDED.bot_clicks,
          unique_visitors = GREATEST(link_click_days.unique_visitors, EXCLUDED.unique_visitors),
          dimensions_derived = false`.execute(db);
      await sql`
        INSERT INTO link_click_months (app_id, environment, link_id, month, clicks, bot_clicks)
        VALUES (${tenant.appId}, ${environment}, ${scope}, ${month}, ${people}, ${bots})
        ON CONFLICT (app_id, environment, link_id, month)
        DO UPDATE SET clicks = link_click_months.clicks + EXCLUDED.clicks,
          bot_clicks = link_click_months.bot_clicks + EXCLUDED.bot_clicks`.execute(db);
    }
    for (const [dimension, value] of Object.entries(values)) {
      await sql`
        INSERT INTO click_dimension_days (app_id, environment, link_id, day, dimension, value,
          clicks, bot_clicks)
        VALUES (${tenant.appId}, ${environment}, '', ${day}, ${dimension}, ${value}, ${people},
          ${bots})
        ON CONFLICT (app_id, environment, link_id, day, dimension, value)
        DO UPDATE SET clicks = click_dimension_days.clicks + EXCLUDED.clicks,
          bot_clicks = click_dimension_days.bot_clicks + EXCLUDED.bot_clicks`.execute(db);
    }
  }
  if (derived) {
    // As the worker derives a finished day (LinkDimensionDaysRepository).
    await sql`
      WITH due AS (
        UPDATE link_click_days SET dimensions_derived = true
        WHERE app_id = ${tenant.appId} AND environment = ${environment} AND link_id = ${linkId}
        RETURNING app_id, environment, link_id, day
      )
      INSERT INTO click_dimension_days (app_id, environment, link_id, day, dimension, value,
        clicks, bot_clicks)
      SELECT c.app_id, c.environment, c.link_id, c.day, v.dimension, v.value, sum(c.clicks),
        sum(c.bot_clicks)
      FROM due JOIN click_rollup_days c USING (app_id, environment, link_id, day)
      CROSS JOIN LATERAL (VALUES ('country', c.country), ('platform', c.platform), ('os', c.os),
        ('browser', c.browser), ('referrer', c.referrer), ('utm_source', c.utm_source),
        ('utm_medium', c.utm_medium), ('utm_campaign', c.utm_campaign), ('source', c.source))
        AS v(dimension, value)
      GROUP BY 1, 2, 3, 4, 5, 6
      ON CONFLICT (app_id, environment, link_id, day, dimension, value)
      DO UPDATE SET clicks = EXCLUDED.clicks, bot_clicks = EXCLUDED.bot_clicks`.execute(db);
  }
}

/**
 * The first day of last month (UTC): within every retention the worker applies (its hourly rows
 * are kept 90 days), whenever the tests run.
 */
const DAY0 = (() => {
  const now = new Date();
  return Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1);
})();
const iso = (ms: number) => new Date(ms).toISOString();
/** The first day of every month with a day in [first, end). */
function monthStarts(first: number, end: number): string[] {
  const starts: string[] = [];
  for (let at = first; at < end;) {
    const day = new Date(at);
    starts.push(iso(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), 1)));
    at = Date.UTC(day.getUTCFullYear(), day.getUTCMonth() + 1, 1);
  }
  return starts;
}
const dayAt = (n: number, hour = 12) => new Date(DAY0 + n * DAY + hour * 3_600_000);
const range = (fromDay: number, toDay: number) =>
  `from=${new Date(DAY0 + fromDay * DAY).toISOString()}&to=${new Date(DAY0 + toDay * DAY).toISOString()}`;

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function analyticsOf(tenant: Tenant, path: string, environment: Environment = 'live') {
  const res = await gateway.api(path, { key: tenant[environment].secret });
  return res as { status: number; body: Json };
}

describe('GET /api/v1/links/{linkId}/analytics', () => {
  it('is the identical 404 for another app, the other environment and no such link', async () => {
    const [alpha, beta] = [
      await createTenant(gateway.deps.db),
      await createTenant(gateway.deps.db),
    ];
    const link = await insertLink(gateway.deps.db, { appId: alpha.appId });
    expect((await analyticsOf(alpha, `/api/v1/links/${link.id}/analytics`)).status).toBe(200);
    for (const [tenant, environment, id] of [
      [beta, 'live', link.id],
      [alpha, 'test', link.id],
      [alpha, 'live', 'lnk_nope'],
      [alpha, 'live', 'not%20an%20id'],
    ] as const) {
      const answer = await analyticsOf(tenant, `/api/v1/links/${id}/analytics`, environment);
      expect({ status: answer.status, body: answer.body }).toEqual({
        status: 404,
        body: NOT_FOUND,
      });
    }
  });

  it.each([
    ['from=yesterday', 'from'],
    ['to=2026-13-01', 'to'],
    ['from=2026-10-02&to=2026-10-01', 'to'],
    ['from=2024-01-01&to=2026-10-01', 'to'],
    ['from=2026-09-01&to=2026-10-15&interval=hour', 'interval'],
    ['interval=week', 'interval'],
    ['groupBy=city', 'groupBy'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=ten', 'limit'],
    ['country=Germany', 'country'],
    ['platform=symbian', 'platform'],
    ['os=beos', 'os'],
    ['browser=mosaic', 'browser'],
    ['referrer=https://x.example/', 'referrer'],
    ['utmSource=', 'utmSource'],
    ['country=US&country=DE', 'country'],
    ['tag=spring', 'tag'],
    ['color=red', 'color'],
  ])('answers 422 naming the parameter for %s', async (query, field) => {
    const tenant = await createTenant(gateway.deps.db);
    const link = await insertLink(gateway.deps.db, { appId: tenant.appId });
    const { status, body } = await analyticsOf(
      tenant,
      `/api/v1/links/${link.id}/analytics?${query}`,
    );
    expect(status).toBe(422);
    expect(body.error).toBe('invalid_request');
    expect(Object.keys(body.fields)).toEqual([field]);
  });

  it('answers totals, every bucket (zeros too), unique visitors by day, and a breakdown that adds up', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const link = await insertLink(gateway.deps.db, { appId: tenant.appId });
    await seedClicks(tenant, link.id, [
      { at: dayAt(0), country: 'DE', clicks: 3, visitors: 2 },
      { at: dayAt(0, 13), country: 'FR', clicks: 2, bot_clicks: 1, visitors: 3 },
      { at: dayAt(2), country: 'DE', clicks: 4, visitors: 1 },
      {
        at: dayAt(2),
        country: 'unknown',
        platform: 'android',
        os: 'android',
        browser: 'chrome',
        clicks: 1,
      },
      // Outside the range.
      { at: dayAt(5), country: 'DE', clicks: 100 },
    ]);
    const { status, body } = await analyticsOf(
      tenant,
      `/api/v1/links/${link.id}/analytics?${range(0, 3)}&groupBy=country&limit=2`,
    );
    expect(status).toBe(200);
    const { analytics } = body;
    expect(analytics.linkId).toBe(link.id);
    expect(analytics.totals).toEqual({
      clicks: 10,
      botClicks: 1,
      uniqueVisitors: 4,
      uniqueVisitorsSummed: true,
    });
    expect(analytics.series).toEqual([
      { start: iso(DAY0), clicks: 5, botClicks: 1, uniqueVisitors: 3 },
      { start: iso(DAY0 + DAY), clicks: 0, botClicks: 0, uniqueVisitors: 0 },
      { start: iso(DAY0 + 2 * DAY), clicks: 5, botClicks: 0, uniqueVisitors: 1 },
    ]);
    expect(analytics.breakdown).toEqual({
      dimension: 'country',
      values: [
        { value: 'DE', clicks: 7, botClicks: 0 },
        { value: 'FR', clicks: 2, botClicks: 1 },
      ],
      rest: { values: 1, clicks: 1, botClicks: 0 },
    });
  });

  it('counts hours, months and filters; unique visitors only by day without filters', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const link = await insertLink(gateway.deps.db, { appId: tenant.appId });
    await seedClicks(tenant, link.id, [
      { at: dayAt(0, 1), country: 'DE', clicks: 3, visitors: 2 },
      { at: dayAt(0, 3), country: 'FR', platform: 'android', os: 'android', clicks: 2 },
      { at: dayAt(40, 3), country: 'DE', platform: 'android', os: 'android', clicks: 5 },
    ]);
    const hourly = (
      await analyticsOf(
        tenant,
        `/api/v1/links/${link.id}/analytics?from=${iso(DAY0 + 1_800_000)}&to=${iso(DAY0 + 4 * 3_600_000)}&interval=hour`,
      )
    ).body.analytics;
    // Buckets whose start lies in the range: 01:00, 02:00 and 03:00.
    expect(
      hourly.series.map((p: Json) => [p.start.slice(11, 13), p.clicks, p.uniqueVisitors]),
    ).toEqual([
      ['01', 3, null],
      ['02', 0, null],
      ['03', 2, null],
    ]);
    expect(hourly.totals).toEqual({
      clicks: 5,
      botClicks: 0,
      uniqueVisitors: null,
      uniqueVisitorsSummed: false,
    });

    const monthly = (
      await analyticsOf(tenant, `/api/v1/links/${link.id}/analytics?${range(0, 61)}&interval=month`)
    ).body.analytics;
    // Day 0 in the first month, day 40 in the second; the range's last days may reach a third.
    // Month points add their days' unique visitors.
    const months = monthStarts(DAY0, DAY0 + 61 * DAY);
    expect(monthly.series.map((p: Json) => [p.start, p.clicks, p.uniqueVisitors])).toEqual(
      months.map((start, index) => [start, index < 2 ? 5 : 0, index === 0 ? 2 : 0]),
    );
    expect(monthly.totals).toEqual({
      clicks: 10,
      botClicks: 0,
      uniqueVisitors: 2,
      uniqueVisitorsSummed: true,
    });

    const android = (
      await analyticsOf(
        tenant,
        `/api/v1/links/${link.id}/analytics?${range(0, 61)}&platform=ANDROID&groupBy=country`,
      )
    ).body.analytics;
    expect(android.filters).toEqual({ platform: 'android' });
    expect(android.totals).toEqual({
      clicks: 7,
      botClicks: 0,
      uniqueVisitors: null,
      uniqueVisitorsSummed: false,
    });
    expect(android.breakdown.values).toEqual([
      { value: 'DE', clicks: 5, botClicks: 0 },
      { value: 'FR', clicks: 2, botClicks: 0 },
    ]);

    const oneDay = (await analyticsOf(tenant, `/api/v1/links/${link.id}/analytics?${range(0, 1)}`))
      .body.analytics;
    expect(oneDay.totals).toEqual({
      clicks: 5,
      botClicks: 0,
      uniqueVisitors: 2,
      uniqueVisitorsSummed: false,
    });
  });

  it('normalises filters as the link host stores values, and a filtered breakdown adds up', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const link = await insertLink(gateway.deps.db, { appId: tenant.appId });
    await seedClicks(tenant, link.id, [
      { at: dayAt(0), country: 'DE', referrer: 'news.example.com', utm_source: 'newsletter' },
      { at: dayAt(0), country: 'DE', referrer: 'news.example.com', clicks: 2, bot_clicks: 1 },
      { at: dayAt(1), country: 'FR', referrer: 'news.example.com', utm_source: 'newsletter' },
      { at: dayAt(1), country: 'DE', utm_source: 'newsletter', clicks: 4 },
    ]);
    const filtered = (
      await analyticsOf(
        tenant,
        `/api/v1/links/${link.id}/analytics?${range(0, 2)}&referrer=News.Example.COM.` +
          `&utmSource=%20%20NewsLetter%20&groupBy=country&limit=1`,
      )
    ).body.analytics;
    expect(filtered.filters).toEqual({ referrer: 'news.example.com', utmSource: 'newsletter' });
    expect(filtered.totals).toEqual({
      clicks: 2,
      botClicks: 0,
      uniqueVisitors: null,
      uniqueVisitorsSummed: false,
    });
    expect(filtered.breakdown).toEqual({
      dimension: 'country',
      values: [{ value: 'DE', clicks: 1, botClicks: 0 }],
      rest: { values: 1, clicks: 1, botClicks: 0 },
    });
    const german = (
      await analyticsOf(tenant, `/api/v1/links/${link.id}/analytics?${range(0, 2)}&country=de`)
    ).body.analytics;
    expect(german.filters).toEqual({ country: 'DE' });
    expect(german.totals.clicks).toBe(7);
    expect(german.totals.botClicks).toBe(1);
  });

  it('reads a breakdown from derived dimension rows and from the combinations alike', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const [derived, fresh] = [
      await insertLink(gateway.deps.db, { appId: tenant.appId }),
      await insertLink(gateway.deps.db, { appId: tenant.appId }),
    ];
    const clicks = [
      { at: dayAt(0), country: 'DE', clicks: 3 },
      { at: dayAt(1), country: 'FR', clicks: 2 },
    ];
    await seedClicks(tenant, derived.id, clicks, { derived: true });
    await seedClicks(tenant, fresh.id, clicks);
    // A late click on a derived day clears its mark: read from the combinations again.
    await seedClicks(tenant, derived.id, [{ at: dayAt(1), country: 'DE', clicks: 1 }]);
    for (const [link, de] of [
      [derived, 4],
      [fresh, 3],
    ] as const) {
      const { breakdown, totals } = (
        await analyticsOf(
          tenant,
          `/api/v1/links/${link.id}/analytics?${range(0, 2)}&groupBy=country`,
        )
      ).body.analytics;
      expect(breakdown.values).toEqual([
        { value: 'DE', clicks: de, botClicks: 0 },
        { value: 'FR', clicks: 2, botClicks: 0 },
      ]);
      expect(totals.clicks).toBe(de + 2);
    }
  });
});

describe('the source dimension (taps of the link URL, scans of its QR code)', () => {
  it('groups by source and filters source=qr on both endpoints; the breakdown adds up', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const [derived, fresh] = [
      await insertLink(gateway.deps.db, { appId: tenant.appId }),
      await insertLink(gateway.deps.db, { appId: tenant.appId }),
    ];
    const clicks = [
      { at: dayAt(0), country: 'DE', clicks: 3 },
      { at: dayAt(0), country: 'DE', source: 'qr', clicks: 2, bot_clicks: 1 },
      { at: dayAt(1), country: 'FR', source: 'qr', clicks: 4 },
    ];
    // A link's breakdown is read from derived dimension rows and from the combinations alike.
    await seedClicks(tenant, derived.id, clicks, { derived: true });
    await seedClicks(tenant, fresh.id, clicks);
    const sum = (values: { clicks: number; botClicks: number }[]) =>
      values.reduce(
        (total, v) => ({
          clicks: total.clicks + v.clicks,
          botClicks: total.botClicks + v.botClicks,
        }),
        { clicks: 0, botClicks: 0 },
      );
    const paths = [
      `/api/v1/links/${derived.id}/analytics`,
      `/api/v1/links/${fresh.id}/analytics`,
      '/api/v1/analytics',
    ];
    for (const [path, factor] of [
      [paths[0], 1],
      [paths[1], 1],
      [paths[2], 2],
    ] as const) {
      const grouped = (await analyticsOf(tenant, `${path}?${range(0, 2)}&groupBy=source`)).body
        .analytics;
      expect({ path, values: grouped.breakdown.values }).toEqual({
        path,
        values: [
          { value: 'qr', clicks: 6 * factor, botClicks: factor },
          { value: 'link', clicks: 3 * factor, botClicks: 0 },
        ],
      });
      expect(sum(grouped.breakdown.values)).toEqual({
        clicks: grouped.totals.clicks,
        botClicks: grouped.totals.botClicks,
      });

      const scans = (await analyticsOf(tenant, `${path}?${range(0, 2)}&source=QR&groupBy=country`))
        .body.analytics;
      expect(scans.filters).toEqual({ source: 'qr' });
      expect({ path, totals: scans.totals }).toEqual({
        path,
        totals: {
          clicks: 6 * factor,
          botClicks: factor,
          uniqueVisitors: null,
          uniqueVisitorsSummed: false,
        },
      });
      expect(scans.breakdown.values).toEqual([
        { value: 'FR', clicks: 4 * factor, botClicks: 0 },
        { value: 'DE', clicks: 2 * factor, botClicks: factor },
      ]);
      const taps = (await analyticsOf(tenant, `${path}?${range(0, 2)}&source=link`)).body.analytics;
      expect(taps.totals.clicks + scans.totals.clicks).toBe(grouped.totals.clicks);
    }
  });

  it('answers 422 naming source for a value outside its list', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const { status, body } = await analyticsOf(tenant, `/api/v1/analytics?source=nfc`);
    expect({ status, fields: body.fields }).toEqual({
      status: 422,
      fields: { source: 'must be one of link, qr' },
    });
  });
});

describe('GET /api/v1/analytics', () => {
  it.each([
    ['tag=', 'tag'],
    ['tag=a&tag=b', 'tag'],
    ['groupBy=city', 'groupBy'],
    ['from=2026-10-01&to=2026-10-01', 'to'],
    ['utmCampaign=%20', 'utmCampaign'],
  ])('answers 422 naming the parameter for %s', async (query, field) => {
    const tenant = await createTenant(gateway.deps.db);
    const { status, body } = await analyticsOf(tenant, `/api/v1/analytics?${query}`);
    expect({ status, error: body.error, fields: Object.keys(body.fields) }).toEqual({
      status: 422,
      error: 'invalid_request',
      fields: [field],
    });
  });

  it("answers the app's totals, breakdown and top links, in the key's environment only", async () => {
    const tenant = await createTenant(gateway.deps.db);
    const links = await Promise.all(
      [1, 2, 3].map((n) =>
        insertLink(gateway.deps.db, { appId: tenant.appId }, { tags: n === 2 ? ['spring'] : [] }),
      ),
    );
    const [a, b, c] = links;
    await seedClicks(tenant, a.id, [{ at: dayAt(0), clicks: 2, visitors: 2 }]);
    await seedClicks(tenant, b.id, [
      { at: dayAt(1), country: 'FR', clicks: 5, bot_clicks: 2, visitors: 4 },
    ]);
    await seedClicks(tenant, c.id, [{ at: dayAt(1), clicks: 3, visitors: 1 }]);
    const testLink = await insertLink(gateway.deps.db, {
      appId: tenant.appId,
      environment: 'test',
    });
    await seedClicks(tenant, testLink.id, [{ at: dayAt(1), clicks: 50 }], { environment: 'test' });

    const { analytics } = (
      await analyticsOf(tenant, `/api/v1/analytics?${range(0, 2)}&groupBy=country&limit=2`)
    ).body;
    // The app's unique visitors: its links' daily figures added (the trigger on link_click_days).
    expect(analytics.totals).toEqual({
      clicks: 10,
      botClicks: 2,
      uniqueVisitors: 7,
      uniqueVisitorsSummed: true,
    });
    // Ties in clicks: more bot clicks first.
    expect(analytics.breakdown.values).toEqual([
      { value: 'FR', clicks: 5, botClicks: 2 },
      { value: 'US', clicks: 5, botClicks: 0 },
    ]);
    expect(analytics.topLinks).toEqual([
      {
        linkId: b.id,
        alias: b.alias,
        url: `https://${tenant.subdomainKey}.${DOMAIN}/${b.alias}`,
        title: b.title,
        clicks: 5,
        botClicks: 2,
      },
      {
        linkId: c.id,
        alias: c.alias,
        url: `https://${tenant.subdomainKey}.${DOMAIN}/${c.alias}`,
        title: c.title,
        clicks: 3,
        botClicks: 0,
      },
    ]);

    const tagged = (await analyticsOf(tenant, `/api/v1/analytics?${range(0, 2)}&tag=spring`)).body
      .analytics;
    expect(tagged.tag).toBe('spring');
    // With a tag the tagged links' own daily figures are added.
    expect(tagged.totals).toEqual({
      clicks: 5,
      botClicks: 2,
      uniqueVisitors: 4,
      uniqueVisitorsSummed: true,
    });
    expect(tagged.topLinks.map((link: Json) => link.linkId)).toEqual([b.id]);

    const test = (await analyticsOf(tenant, `/api/v1/analytics?${range(0, 2)}`, 'test')).body
      .analytics;
    expect(test.totals.clicks).toBe(50);
    expect(test.topLinks.map((link: Json) => link.linkId)).toEqual([testLink.id]);
  });

  it('finds the exact top links when no month alone has the leader in its top K', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const hidden = await seedHiddenLeader(tenant);
    const { topLinks } = (await analyticsOf(tenant, `/api/v1/analytics?${range(0, 61)}&limit=1`))
      .body.analytics;
    expect(topLinks.map((link: Json) => [link.linkId, link.clicks])).toEqual([[hidden.id, 30]]);
    const top20 = (await analyticsOf(tenant, `/api/v1/analytics?${range(0, 61)}&limit=20`)).body
      .analytics.topLinks;
    expect(top20.map((link: Json) => [link.linkId, link.clicks])).toEqual(
      await plainTopLinks(tenant, 20),
    );

    // The same answer, and the rounds it took, from the planner on the real statements: the
    // first round (K = 100 a month) cannot prove it, the second (K = 1,000) can.
    const reader = new AnalyticsReader(gateway.deps.db);
    const monthTop = jest.spyOn(reader, 'monthTop');
    const linkTotals = jest.spyOn(reader, 'linkTotals');
    const top = await topLinksOfApp(reader, appScope(tenant), OCT_NOV, 3);
    expect(top.map((link) => [link.linkId, link.clicks])).toEqual(await plainTopLinks(tenant, 3));
    expect(monthTop.mock.calls.map((call) => call[2])).toEqual([100, 100, 1000, 1000]);
    expect(linkTotals.mock.calls.map((call) => call[3].limit)).toEqual([undefined, undefined]);
  });

  it('falls back to the plain sum over every link once K reaches its maximum', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const hidden = await seedHiddenLeader(tenant);
    const reader = new AnalyticsReader(gateway.deps.db);
    const monthTop = jest.spyOn(reader, 'monthTop');
    const linkTotals = jest.spyOn(reader, 'linkTotals');
    const top = await topLinksOfApp(reader, appScope(tenant), OCT_NOV, 5, {
      first: 100,
      max: 1000,
    });
    expect(top[0].linkId).toBe(hidden.id);
    expect(top.map((link) => [link.linkId, link.clicks])).toEqual(await plainTopLinks(tenant, 5));
    expect(monthTop.mock.calls.map((call) => call[2])).toEqual([100, 100]);
    expect(linkTotals.mock.calls.map((call) => call[3])).toEqual([
      { candidates: expect.any(Array) },
      { limit: 5 },
    ]);
  });
});

const OCT_NOV = { grain: 'day', first: '2026-10-01', end: '2026-12-01' } as const;

function appScope(tenant: Tenant): AnalyticsScope {
  return { appId: tenant.appId, environment: 'live', links: { kind: 'app' } };
}

/**
 * link_click_days and link_click_months (links' rows and the app's) of 101 links with 20 clicks
 * in October only, 101 with 20 in November only, and one with 15 in each: over both months the
 * top link (30), yet outside each month's top 100 (whose 100th has 20: a bound of 40).
 */
async function seedHiddenLeader(tenant: Tenant) {
  const db = gateway.deps.db;
  const insert = (n: number) =>
    Promise.all(Array.from({ length: n }, () => insertLink(db, { appId: tenant.appId })));
  const [october, november, [hidden]] = [await insert(101), await insert(101), await insert(1)];
  const rows = [
    ...october.map((link) => [link.id, '2026-10-05', 20] as const),
    ...november.map((link) => [link.id, '2026-11-05', 20] as const),
    [hidden.id, '2026-10-10', 15] as const,
    [hidden.id, '2026-11-10', 15] as const,
  ];
  await sql`
    WITH seeded AS (
      SELECT * FROM unnest(${rows.map((row) => row[0])}::text[], ${rows.map((row) => row[1])}::date[],
        ${rows.map((row) => row[2])}::int[]) AS t(link_id, day, clicks)
    ), scoped AS (
      SELECT link_id, day, clicks FROM seeded
      UNION ALL SELECT '', day, sum(clicks)::int FROM seeded GROUP BY day
    ), days AS (
      INSERT INTO link_click_days (app_id, environment, link_id, day, clicks, bot_clicks,
        unique_visitors)
      SELECT ${tenant.appId}, 'live', link_id, day, clicks, 0, 0 FROM scoped
    )
    INSERT INTO link_click_months (app_id, environment, link_id, month, clicks, bot_clicks)
    SELECT ${tenant.appId}, 'live', link_id, date_trunc('month', day)::date, sum(clicks), 0
    FROM scoped GROUP BY 3, 4`.execute(db);
  return hidden;
}

/** The app's top links over October and November by the plain sum of every link's days. */
async function plainTopLinks(tenant: Tenant, limit: number) {
  const sums = await sql<{ link_id: string; clicks: number }>`
    SELECT link_id, sum(clicks)::int AS clicks FROM link_click_days
    WHERE app_id = ${tenant.appId} AND environment = 'live' AND link_id <> ''
      AND day >= '2026-10-01' AND day < '2026-12-01'
    GROUP BY link_id ORDER BY clicks DESC, sum(bot_clicks) DESC, link_id LIMIT ${limit}`.execute(
    gateway.deps.db,
  );
  return sums.rows.map((row) => [row.link_id, row.clicks]);
}
