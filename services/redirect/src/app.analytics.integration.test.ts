import { insertLink } from '@linkservice/testing';
import { sql } from 'kysely';
import { LINK_DAY_VALUE_CAP } from '@linkservice/contracts';
import {
  ANDROID,
  IPHONE,
  FACEBOOK,
  clickCount,
  createTestApp,
  redirectForFile,
} from './testing/harness';
import type { Harness, TestApp } from './testing/harness';

// Click analytics (README "Analytics: what is counted, and what is never kept"): every counted
// click adds its hour, dimensions and visitor; the link's clickCount and its rollups gain alike.

const h = redirectForFile({
  CLICK_FLUSH_INTERVAL_MS: '600000',
  GEO_COUNTRY_HEADER: 'cf-ipcountry',
  TRUST_FORWARDED_FOR: 'true',
});

const CURL = 'curl/8.5.0';

interface Row {
  link_id: string;
  country: string;
  platform: string;
  os: string;
  browser: string;
  referrer: string;
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  source: string;
  clicks: number;
  bot_clicks: number;
}

async function rollup(h: Harness, app: TestApp, scope: string): Promise<Row[]> {
  const result = await sql<Row>`
    SELECT link_id, country, platform, os, browser, referrer, utm_source, utm_medium,
      utm_campaign, source, sum(clicks)::int AS clicks, sum(bot_clicks)::int AS bot_clicks
    FROM click_rollup_days
    WHERE app_id = ${app.appId} AND environment = 'live' AND link_id = ${scope}
    GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10
    ORDER BY clicks DESC, bot_clicks DESC, referrer, source`.execute(h.db);
  return result.rows;
}

async function day(h: Harness, app: TestApp, scope: string) {
  const result = await sql<{ clicks: number; bot_clicks: number; unique_visitors: number }>`
    SELECT sum(clicks)::int AS clicks, sum(bot_clicks)::int AS bot_clicks,
      sum(unique_visitors)::int AS unique_visitors
    FROM link_click_days
    WHERE app_id = ${app.appId} AND environment = 'live' AND link_id = ${scope}`.execute(h.db);
  return result.rows[0];
}

async function hourlyTotal(h: Harness, app: TestApp, scope: string): Promise<number> {
  const result = await sql<{ total: number }>`
    SELECT coalesce(sum(clicks + bot_clicks), 0)::int AS total FROM click_rollup_hours
    WHERE app_id = ${app.appId} AND environment = 'live' AND link_id = ${scope}`.execute(h.db);
  return result.rows[0].total;
}

async function dimensionDays(h: Harness, app: TestApp, scope: string, dimension: string) {
  const result = await sql<{ value: string; clicks: number; bot_clicks: number }>`
    SELECT value, sum(clicks)::int AS clicks, sum(bot_clicks)::int AS bot_clicks
    FROM click_dimension_days
    WHERE app_id = ${app.appId} AND environment = 'live' AND link_id = ${scope}
      AND dimension = ${dimension}
    GROUP BY value ORDER BY value`.execute(h.db);
  return result.rows;
}

describe('click analytics', () => {
  beforeAll(async () => {
    await h.resources.salts?.refresh();
  });

  it('adds each counted click to its dimensions, and bots to the bot figures only', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app);
    const get = (query: string, headers: Record<string, string>, method = 'GET') =>
      h.get(`/${link.alias}${query}`, { host: app.liveHost, headers, method });
    // A miss (counted with COUNT_CLICKS), then hits (counted by the lookup script).
    await get('?utm_source=%20News%20Letter&utm_medium=EMAIL&private=x', {
      'user-agent': IPHONE,
      referer: 'https://www.Example.org/path/secret?q=1',
      'cf-ipcountry': 'de',
      'x-forwarded-for': '203.0.113.7',
    });
    await h.cached(app, link.alias);
    await get('', {
      'user-agent': ANDROID,
      'cf-ipcountry': 'XX',
      'x-forwarded-for': '203.0.113.8',
    });
    await get('', { 'user-agent': CURL, 'x-forwarded-for': '203.0.113.9' });
    // Neither previews nor HEAD count.
    await get('', { 'user-agent': FACEBOOK });
    await get('', { 'user-agent': IPHONE }, 'HEAD');
    await h.resources.flusher.flush();

    expect(await clickCount(h.db, link.id)).toBe(3);
    // The pass' fields: the link's clicks, three combinations, and one new-visitor mark.
    expect(h.resources.flusher.lastPass).toEqual({ fields: 5, statements: 1 });
    // Ordered as `rollup` reads them: by clicks, then referrer ('direct' first).
    const expected = [
      {
        link_id: link.id,
        country: 'unknown',
        platform: 'android',
        os: 'android',
        browser: 'chrome',
        referrer: 'direct',
        utm_source: 'none',
        utm_medium: 'none',
        utm_campaign: 'none',
        source: 'link',
        clicks: 1,
        bot_clicks: 0,
      },
      {
        link_id: link.id,
        country: 'DE',
        platform: 'ios',
        os: 'ios',
        browser: 'safari',
        referrer: 'www.example.org',
        utm_source: 'news letter',
        utm_medium: 'email',
        utm_campaign: 'none',
        source: 'link',
        clicks: 1,
        bot_clicks: 0,
      },
      {
        link_id: link.id,
        country: 'unknown',
        platform: 'other',
        os: 'other',
        browser: 'other',
        referrer: 'direct',
        utm_source: 'none',
        utm_medium: 'none',
        utm_campaign: 'none',
        source: 'link',
        clicks: 0,
        bot_clicks: 1,
      },
    ];
    expect(await rollup(h, app, link.id)).toEqual(expected);
    // The app's own rows hold the same clicks.
    expect(await rollup(h, app, '')).toEqual(expected.map((row) => ({ ...row, link_id: '' })));
    expect(await day(h, app, link.id)).toEqual({ clicks: 2, bot_clicks: 1, unique_visitors: 2 });
    expect(await day(h, app, '')).toEqual({ clicks: 2, bot_clicks: 1, unique_visitors: 2 });
    expect(await hourlyTotal(h, app, link.id)).toBe(3);
    // One dimension at a time, the same clicks (kept for the app only).
    expect(await dimensionDays(h, app, link.id, 'platform')).toEqual([]);
    for (const scope of ['']) {
      const byValue = await dimensionDays(h, app, scope, 'platform');
      expect(byValue).toEqual([
        { value: 'android', clicks: 1, bot_clicks: 0 },
        { value: 'ios', clicks: 1, bot_clicks: 0 },
        { value: 'other', clicks: 0, bot_clicks: 1 },
      ]);
      expect(await dimensionDays(h, app, scope, 'utm_source')).toEqual([
        { value: 'news letter', clicks: 1, bot_clicks: 0 },
        { value: 'none', clicks: 1, bot_clicks: 1 },
      ]);
    }
  });

  it('counts a scan (the scan marker qr=1) once, as source qr; the fallback never sees the marker', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: 'https://example.com/w?own=1' });
    const get = async (query: string) => {
      const res = await h.get(`/${link.alias}${query}`, {
        host: app.liveHost,
        headers: { 'user-agent': ANDROID, 'x-forwarded-for': '203.0.113.20' },
      });
      expect(res.status).toBe(302);
      return res.headers.get('location');
    };
    // A miss, then hits: both counting paths. Other parameters pass through byte for byte.
    expect(await get('?qr=1')).toBe('https://example.com/w?own=1');
    await h.cached(app, link.alias);
    expect(await get('?utm_source=Poster&qr=1&x=a%20b')).toBe(
      'https://example.com/w?own=1&utm_source=Poster&x=a%20b',
    );
    expect(await get('?qr=1&qr=1')).toBe('https://example.com/w?own=1');
    // Not the marker: a tap, and the pair passes through.
    expect(await get('?qr=10')).toBe('https://example.com/w?own=1&qr=10');
    expect(await get('')).toBe('https://example.com/w?own=1');
    await h.resources.flusher.flush();

    // Each request once: a scan is a click like a tap.
    expect(await clickCount(h.db, link.id)).toBe(5);
    const bySource = (rows: Row[]) =>
      rows.map(({ source, utm_source, clicks }) => ({ source, utm_source, clicks }));
    const expected = [
      { source: 'link', utm_source: 'none', clicks: 2 },
      { source: 'qr', utm_source: 'none', clicks: 2 },
      { source: 'qr', utm_source: 'poster', clicks: 1 },
    ];
    const ordered = (rows: Row[]) =>
      bySource(rows).sort((a, b) =>
        `${a.source}${a.utm_source}`.localeCompare(`${b.source}${b.utm_source}`),
      );
    expect(ordered(await rollup(h, app, link.id))).toEqual(expected);
    expect(ordered(await rollup(h, app, ''))).toEqual(expected);
    expect(await hourlyTotal(h, app, link.id)).toBe(5);
    expect(await dimensionDays(h, app, '', 'source')).toEqual([
      { value: 'link', clicks: 2, bot_clicks: 0 },
      { value: 'qr', clicks: 3, bot_clicks: 0 },
    ]);
  });

  it('counts unique visitors per link and day, and the app as the sum of its links', async () => {
    const app = await createTestApp(h.db);
    const [first, second] = [await insertLink(h.db, app), await insertLink(h.db, app)];
    const visit = (alias: string, address: string, userAgent = IPHONE) =>
      h.get(`/${alias}`, {
        host: app.liveHost,
        headers: { 'user-agent': userAgent, 'x-forwarded-for': address },
      });
    await visit(first.alias, '198.51.100.1');
    await visit(first.alias, '198.51.100.1');
    await visit(first.alias, '198.51.100.2');
    // Same address, another user agent: another visitor.
    await visit(first.alias, '198.51.100.2', ANDROID);
    await h.resources.flusher.flush();
    await visit(second.alias, '198.51.100.1');
    await visit(first.alias, '198.51.100.1');
    await h.resources.flusher.flush();

    expect((await day(h, app, first.id)).unique_visitors).toBe(3);
    expect((await day(h, app, second.id)).unique_visitors).toBe(1);
    expect(await day(h, app, '')).toEqual({ clicks: 6, bot_clicks: 0, unique_visitors: 4 });
  });

  it(`keeps ${LINK_DAY_VALUE_CAP} referrer hosts per link and day, and counts the rest as other`, async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app);
    const hosts = Array.from({ length: LINK_DAY_VALUE_CAP + 10 }, (_, i) => `site${i}.example`);
    for (const [index, host] of hosts.entries()) {
      await h.get(`/${link.alias}`, {
        host: app.liveHost,
        headers: { 'user-agent': IPHONE, referer: `https://${host}/` },
      });
      // Two flushes: the cap holds across them.
      if (index === 20) await h.resources.flusher.flush();
    }
    await h.resources.flusher.flush();
    const rows = await rollup(h, app, link.id);
    const named = rows.filter((row) => row.referrer !== 'other');
    expect(named).toHaveLength(LINK_DAY_VALUE_CAP);
    expect(rows.find((row) => row.referrer === 'other')?.clicks).toBe(10);
    expect(rows.reduce((sum, row) => sum + row.clicks, 0)).toBe(await clickCount(h.db, link.id));
  });
});
