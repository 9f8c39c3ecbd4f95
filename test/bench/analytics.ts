import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import {
  ANALYTICS_TABLES,
  AnalyticsPartitionsRepository,
  LinkDimensionDaysRepository,
  workerEnvSchema,
} from '@linkservice/worker';
import type { Tenant } from '../support/tenants';
import type { LoadJob } from './load-protocol';
import type { Scenario, ScenarioInputs } from './scenarios';
import { formatCount } from './scenarios';
import { seedLargeApp, seededLinkId } from './seed';

/**
 * The analytics app of `pnpm bench` (README "Analytics at scale"): ANALYTICS_LINKS links and
 * about 100 million clicks over ANALYTICS_DAYS days, as the rollups the flusher and the worker
 * keep (never through the link host: that would take hours). Link n (its rank) gets
 * PER_DAY_TOP / n clicks a day (Zipf, s = 1: 1/n of the top link's), times a factor between 0.7
 * and 1.3 that varies by link and day; links whose share rounds to no click that day get no row,
 * as in production. 1 click in 50 is a bot's; unique visitors are 70% of the clicks.
 */
export const ANALYTICS_LINKS = 100_000;
export const ANALYTICS_DAYS = 90;
const PER_DAY_TOP = 92_000;
/** The worker's defaults of ANALYTICS_HOURLY/DAILY_RETENTION_DAYS (the bench's worker keeps them). */
const WORKER_RETENTION = {
  hourlyDays: workerEnvSchema.shape.ANALYTICS_HOURLY_RETENTION_DAYS.parse(undefined),
  dailyDays: workerEnvSchema.shape.ANALYTICS_DAILY_RETENTION_DAYS.parse(undefined),
};
/** Links whose every combination of dimensions is seeded (rank): the busiest, a busy, a typical. */
export const SAMPLED_RANKS = [1, 100, 10_000] as const;

const COUNTRIES = [
  'US',
  'DE',
  'FR',
  'GB',
  'IN',
  'BR',
  'JP',
  'CA',
  'ES',
  'IT',
  'MX',
  'NL',
  'PL',
  'SE',
  'TR',
  'KR',
  'AU',
  'AR',
  'ID',
  'NG',
  'PH',
  'VN',
  'EG',
  'ZA',
  'CH',
  'BE',
  'AT',
  'NO',
  'DK',
  'FI',
  'PT',
  'IE',
  'CZ',
  'RO',
  'HU',
  'GR',
  'IL',
  'SG',
  'NZ',
  'unknown',
];
const DEVICES = [
  ['ios', 'ios', 'safari'],
  ['ios', 'ios', 'instagram'],
  ['android', 'android', 'chrome'],
  ['android', 'android', 'samsung'],
  ['desktop', 'windows', 'chrome'],
  ['desktop', 'macos', 'safari'],
];
const REFERRERS = [
  'direct',
  'www.google.com',
  'l.instagram.com',
  't.co',
  'news.example.com',
  'other',
];
const UTMS = [
  ['none', 'none', 'none'],
  ['newsletter', 'email', 'spring'],
];
/** Combinations of dimension values a day can have: 40 x 6 x 6 x 2. */
const COMBINATIONS = COUNTRIES.length * DEVICES.length * REFERRERS.length * UTMS.length;

export interface AnalyticsApp {
  tenant: Tenant;
  /** Clicks seeded (people and bots). */
  clicks: number;
  /** link_click_days rows of links. */
  linkDays: number;
  /** Combinations (click_rollup_days rows) of each sampled link. */
  sampledRows: Record<number, number>;
  /** Bytes of each analytics table, indexes and partitions included. */
  storage: Record<string, number>;
}

const textArray = (values: readonly string[]) => sql.lit(`{${values.join(',')}}`);

/**
 * Seeds the app: links, link_click_days and link_click_months of every link, the app's own rows
 * ('' scope: totals, every combination, its dimension rows), every combination of the sampled
 * links, and their dimension rows of finished days derived by the worker's own code.
 */
export async function seedAnalyticsApp(db: Kysely<Database>): Promise<AnalyticsApp> {
  const { tenant } = await seedLargeApp(db, ANALYTICS_LINKS, {
    name: 'Bench: analytics',
    tag: 'ANLYT',
  });
  const app = tenant.appId;
  // The monthly partitions of every seeded day first, as the worker keeps them months ahead of
  // the clicks: rows written into the DEFAULT partitions would be moved out by the worker when
  // the bench starts it, after the statistics below were taken (the rows in new tables without
  // any, the DEFAULT's still counting them), and each line would measure that, not the app.
  const partitions = new AnalyticsPartitionsRepository(db, WORKER_RETENTION);
  const firstDay = new Date(Date.now() - (ANALYTICS_DAYS - 1) * 86_400_000);
  for (let months = 0; ; months += 1) {
    const at = new Date(Date.UTC(firstDay.getUTCFullYear(), firstDay.getUTCMonth() + months, 1));
    if (at.getTime() > Date.now()) break;
    await partitions.ensureMonths(at);
  }
  const idOf = sql`'lnk_ANLYT' || lpad(g::text, 21, '0')`;
  const today = sql`(now() AT TIME ZONE 'UTC')::date`;
  // The seeded figures as the flusher would have left them; its triggers (the app's unique
  // visitors) would fire once per row: the app's rows are summed below instead.
  await db.transaction().execute(async (tx) => {
    await sql`SET LOCAL session_replication_role = replica`.execute(tx);
    await sql`
      INSERT INTO link_click_days (app_id, environment, link_id, day, clicks, bot_clicks,
        unique_visitors, dimensions_derived)
      SELECT ${app}, 'live', id, day, clicks - clicks / 50, clicks / 50, clicks * 7 / 10,
        NOT (g = ANY(${SAMPLED_RANKS as unknown as number[]}::int[]) AND day < ${today})
      FROM (
        SELECT g, ${idOf} AS id, ${today} - d AS day,
          floor(${PER_DAY_TOP}::float8 / g * (0.7 + ((g * 7919 + d * 104729) % 61) / 100.0))::bigint
            AS clicks
        FROM generate_series(1, ${ANALYTICS_LINKS}::int) AS g,
          generate_series(0, ${ANALYTICS_DAYS - 1}::int) AS d
      ) AS seeded
      WHERE clicks > 0`.execute(tx);
    await sql`
      INSERT INTO link_click_days (app_id, environment, link_id, day, clicks, bot_clicks,
        unique_visitors)
      SELECT app_id, environment, '', day, sum(clicks), sum(bot_clicks), sum(unique_visitors)
      FROM link_click_days WHERE app_id = ${app} GROUP BY app_id, environment, day`.execute(tx);
  });
  await sql`
    INSERT INTO link_click_months (app_id, environment, link_id, month, clicks, bot_clicks)
    SELECT app_id, environment, link_id, date_trunc('month', day)::date, sum(clicks),
      sum(bot_clicks)
    FROM link_click_days WHERE app_id = ${app} GROUP BY 1, 2, 3, 4`.execute(db);

  // Every combination of a scope's day: combination i of k = min(COMBINATIONS, clicks) gets an
  // equal share of the day's clicks (the first ones one more), people and bots alike.
  const combinations = (scope: 'link' | 'app') => sql`
    INSERT INTO click_rollup_days (app_id, environment, link_id, day, country, platform, os,
      browser, referrer, utm_source, utm_medium, utm_campaign, source, clicks, bot_clicks)
    SELECT t.app_id, t.environment, t.link_id, t.day,
      (${textArray(COUNTRIES)}::text[])[1 + i % ${COUNTRIES.length}],
      (${textArray(DEVICES.map((d) => d[0]))}::text[])[1 + (i / 40) % 6],
      (${textArray(DEVICES.map((d) => d[1]))}::text[])[1 + (i / 40) % 6],
      (${textArray(DEVICES.map((d) => d[2]))}::text[])[1 + (i / 40) % 6],
      (${textArray(REFERRERS)}::text[])[1 + (i / 240) % 6],
      (${textArray(UTMS.map((u) => u[0]))}::text[])[1 + (i / 1440) % 2],
      (${textArray(UTMS.map((u) => u[1]))}::text[])[1 + (i / 1440) % 2],
      (${textArray(UTMS.map((u) => u[2]))}::text[])[1 + (i / 1440) % 2],
      -- One combination in ten a QR code's scans.
      CASE WHEN i % 10 = 9 THEN 'qr' ELSE 'link' END,
      t.clicks / t.k + CASE WHEN i < t.clicks % t.k THEN 1 ELSE 0 END,
      t.bot_clicks / t.k + CASE WHEN i < t.bot_clicks % t.k THEN 1 ELSE 0 END
    FROM (
      SELECT app_id, environment, link_id, day, clicks, bot_clicks,
        least(${COMBINATIONS}, greatest(clicks + bot_clicks, 1))::int AS k
      FROM link_click_days
      WHERE app_id = ${app} AND ${
        scope === 'app'
          ? sql`link_id = ''`
          : sql`link_id = ANY(${SAMPLED_RANKS.map((rank) => seededLinkId(rank, 'ANLYT'))}::text[])`
      }
    ) AS t, generate_series(0, t.k - 1) AS i`;
  await combinations('link').execute(db);
  await combinations('app').execute(db);
  // The app's dimension rows, as the flusher keeps them.
  await sql`
    INSERT INTO click_dimension_days (app_id, environment, link_id, day, dimension, value, clicks,
      bot_clicks)
    SELECT c.app_id, c.environment, c.link_id, c.day, v.dimension, v.value, sum(c.clicks),
      sum(c.bot_clicks)
    FROM click_rollup_days c
    CROSS JOIN LATERAL (VALUES
      ('country', c.country), ('platform', c.platform), ('os', c.os), ('browser', c.browser),
      ('referrer', c.referrer), ('utm_source', c.utm_source), ('utm_medium', c.utm_medium),
      ('utm_campaign', c.utm_campaign), ('source', c.source)
    ) AS v(dimension, value)
    WHERE c.app_id = ${app} AND c.link_id = ''
    GROUP BY 1, 2, 3, 4, 5, 6`.execute(db);
  // The sampled links' finished days, derived by the worker's code (the only ones not marked).
  const derive = new LinkDimensionDaysRepository(db);
  while ((await derive.deriveSlice(500)) > 0);
  for (const table of [
    'link_click_days',
    'link_click_months',
    'click_rollup_days',
    'click_dimension_days',
  ]) {
    await sql`VACUUM ANALYZE ${sql.table(table)}`.execute(db);
  }

  const figures = await sql<{ clicks: number; link_days: number }>`
    SELECT coalesce(sum(clicks + bot_clicks), 0)::bigint AS clicks, count(*)::int AS link_days
    FROM link_click_days WHERE app_id = ${app} AND link_id <> ''`.execute(db);
  const sampled = await sql<{ link_id: string; rows: number }>`
    SELECT link_id, count(*)::int AS rows FROM click_rollup_days
    WHERE app_id = ${app} AND link_id <> '' GROUP BY link_id`.execute(db);
  const sampledRows: Record<number, number> = {};
  for (const rank of SAMPLED_RANKS) {
    sampledRows[rank] =
      sampled.rows.find((row) => row.link_id === seededLinkId(rank, 'ANLYT'))?.rows ?? 0;
  }
  // Storage: every analytics table with its indexes (partitions included), and the links'.
  const sizes = await sql<{ name: string; bytes: number; rows: number }>`
    SELECT t.name, (
      SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
      FROM pg_class c
      WHERE c.oid = t.name::regclass
        OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = t.name::regclass)
    ) AS bytes, 0 AS rows
    FROM unnest(${[...ANALYTICS_TABLES]}::text[]) AS t(name)`.execute(db);
  const storage: Record<string, number> = {};
  for (const row of sizes.rows) storage[row.name] = Number(row.bytes);
  return {
    tenant,
    storage,
    clicks: Number(figures.rows[0]?.clicks ?? 0),
    linkDays: figures.rows[0]?.link_days ?? 0,
    sampledRows,
  };
}

/** The analytics lines: one connection each, p50 targets of the analytics issue. */
export function analyticsScenarios(
  inputs: Pick<ScenarioInputs, 'settings'> & { analytics: AnalyticsApp },
): Scenario[] {
  const { settings, analytics } = inputs;
  const auth = { authorization: `Bearer ${analytics.tenant.live.secret}` };
  const dayStart = (daysAgo: number) => {
    const today = new Date(new Date().toISOString().slice(0, 10));
    return new Date(today.getTime() - daysAgo * 86_400_000).toISOString();
  };
  const get = (origin: string, paths: string[]): LoadJob => ({
    kind: 'http',
    origin,
    durationSeconds: settings.durationSeconds,
    warmupSeconds: settings.warmupSeconds,
    method: 'GET',
    paths,
    headers: auth,
    expectStatus: 200,
    connections: 1,
  });
  const ninetyDays = `from=${encodeURIComponent(dayStart(ANALYTICS_DAYS - 1))}&interval=day`;
  const linkLine = (rank: number, goal: boolean): Scenario => ({
    id: `analytics-link-90d-rank-${rank}`,
    title:
      `GET /links/{id}/analytics, 90 days by day, groupBy=country: link of rank ${rank} ` +
      `(${formatCount(analytics.sampledRows[rank] ?? 0)} combination rows)`,
    subject: 'gateway',
    ...(goal ? { goal: { kind: 'p50-max', ms: 50 } as const } : {}),
    job: (origin) =>
      get(origin, [
        `/api/v1/links/${seededLinkId(rank, 'ANLYT')}/analytics?${ninetyDays}&groupBy=country`,
      ]),
  });
  return [
    ...SAMPLED_RANKS.map((rank) => linkLine(rank, true)),
    {
      id: 'analytics-top-links-30d',
      title:
        `GET /analytics, 30 days: the app's top 10 links, totals and series ` +
        `(${formatCount(ANALYTICS_LINKS)} links, ${formatCount(analytics.clicks)} clicks in ${ANALYTICS_DAYS} days)`,
      subject: 'gateway',
      goal: { kind: 'p50-max', ms: 200 },
      job: (origin) =>
        get(origin, [
          `/api/v1/analytics?from=${encodeURIComponent(dayStart(29))}&interval=day&limit=10`,
        ]),
    },
    {
      id: 'analytics-app-breakdown-90d',
      title: "GET /analytics, 90 days by day, groupBy=os (the app's dimension rows)",
      subject: 'gateway',
      job: (origin) => get(origin, [`/api/v1/analytics?${ninetyDays}&groupBy=os`]),
    },
  ];
}
