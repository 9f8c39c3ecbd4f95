import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '@linkservice/db';
import {
  ANALYTICS_DIMENSIONS,
  APP_DAY_VALUE_CAP,
  DIRECT_REFERRER,
  LINK_DAY_VALUE_CAP,
  NO_UTM,
  OTHER_VALUE,
} from '@linkservice/contracts';
import { parseClickField } from '../analytics/click-analytics';

const DIMENSION_COLUMNS = sql.raw(ANALYTICS_DIMENSIONS.map((d) => d.column).join(', '));
/** Each dimension of a `capped` row `c` as (dimension, value): one row per dimension. */
const DIMENSION_VALUES = sql.join(
  ANALYTICS_DIMENSIONS.map((d) => sql`(${d.column}, ${sql.ref(`c.${d.column}`)})`),
);
/** The rollups' key columns by position (scope, bucket and every dimension): key order. */
const KEY_ORDER = sql.raw(
  Array.from({ length: 4 + ANALYTICS_DIMENSIONS.length }, (_, i) => String(i + 1)).join(', '),
);
const PEOPLE = sql.raw('coalesce(sum(clicks) FILTER (WHERE NOT bot), 0)');
const BOTS = sql.raw('coalesce(sum(clicks) FILTER (WHERE bot), 0)');

/** A capped dimension's value of a `scoped` row: 'other' when this flush folded it (`folded`). */
function cappedValue(column: 'referrer' | 'utm_source' | 'utm_medium' | 'utm_campaign') {
  const value = sql.ref(`s.${column}`);
  return sql`CASE WHEN EXISTS (
    SELECT 1 FROM folded f
    WHERE f.app_id = s.app_id AND f.environment = s.environment AND f.scope = s.scope
      AND f.day = s.day AND f.dimension = ${column} AND f.value = ${value}
  ) THEN ${OTHER_VALUE} ELSE ${value} END`;
}

/**
 * Clicks counted per field of the pending hash, applied once under `id` (link_click_batches): a
 * link id's clicks, and (click-analytics.ts) a link id with dimensions: those clicks' hour,
 * bot or person, and dimension values (a link's new-visitor marks count nothing here).
 */
export interface ClickBatch {
  id: string;
  counts: ReadonlyMap<string, number>;
}

/** A link's unique visitors on a UTC day so far (its HyperLogLog's count). */
export interface VisitorCount {
  linkId: string;
  /** Days since the epoch. */
  day: number;
  visitors: number;
}

/** link_clicks, the click analytics rollups and the ledger of applied batches, as the flusher writes them. */
export class ClickBatchesRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Adds batches of counted clicks to link_clicks and the analytics rollups, each batch at most
   * once per id, in a single statement (so atomically: a link's clickCount and its analytics
   * gain the same clicks, or neither does): the batch ids are claimed in link_click_batches and
   * the counts of the claimed ones move (summed per link, and per scope, bucket and dimension
   * values). A concurrent claimer of the same id waits for the first to commit and then claims
   * nothing. `visitors` raise links' daily unique visitors (never lower them), claimed or not.
   *
   * link_clicks: only it is written (see the link-clicks migration): a link's first click
   * inserts its row, later ones add to it. The links row is only read (for the app and
   * environment a new row copies, and to skip ids of links that do not exist).
   *
   * Analytics (see the click-analytics migration): every click counts for its link's rows and
   * its app's ('' scope); values of the capped dimensions that are new to a scope's day are
   * admitted in click_dimension_values while the day has room (LINK_DAY_VALUE_CAP,
   * APP_DAY_VALUE_CAP; the most clicked first), and counted as 'other' beyond it.
   *
   * Rows are upserted in key order, so two flushers with overlapping batches lock them in the
   * same order. Returns the ids this call claimed; one missing had already been applied.
   */
  async apply(
    batches: readonly ClickBatch[],
    visitors: readonly VisitorCount[] = [],
  ): Promise<Set<string>> {
    if (batches.length === 0 && visitors.length === 0) return new Set();
    const counts = { batch: [] as string[], link: [] as string[], clicks: [] as number[] };
    const dims = {
      batch: [] as string[],
      link: [] as string[],
      hour: [] as number[],
      bot: [] as boolean[],
      country: [] as string[],
      platform: [] as string[],
      os: [] as string[],
      browser: [] as string[],
      referrer: [] as string[],
      utmSource: [] as string[],
      medium: [] as string[],
      campaign: [] as string[],
      source: [] as string[],
      clicks: [] as number[],
    };
    for (const batch of batches) {
      for (const [field, count] of batch.counts) {
        const parsed = parseClickField(field);
        if (parsed?.kind === 'clicks') {
          counts.batch.push(batch.id);
          counts.link.push(parsed.linkId);
          counts.clicks.push(count);
        }
        if (parsed?.kind !== 'dimensions') continue;
        const dimension = parsed;
        dims.batch.push(batch.id);
        dims.link.push(dimension.linkId);
        dims.hour.push(dimension.hour);
        dims.bot.push(dimension.bot);
        dims.country.push(dimension.country);
        dims.platform.push(dimension.platform);
        dims.os.push(dimension.os);
        dims.browser.push(dimension.browser);
        dims.referrer.push(dimension.referrer);
        dims.utmSource.push(dimension.utm_source);
        dims.medium.push(dimension.utm_medium);
        dims.campaign.push(dimension.utm_campaign);
        dims.source.push(dimension.source);
        dims.clicks.push(count);
      }
    }
    const result = await sql<{ id: string }>`
      WITH claim AS (
        INSERT INTO link_click_batches (id)
        SELECT DISTINCT id FROM unnest(${batches.map((b) => b.id)}::text[]) AS b(id)
        ON CONFLICT (id) DO NOTHING
        RETURNING id
      ), counted AS (
        INSERT INTO link_clicks (link_id, app_id, environment, click_count)
        SELECT l.id, l.app_id, l.environment, c.clicks
        FROM (
          SELECT r.link_id, sum(r.clicks)::bigint AS clicks
          FROM unnest(${counts.batch}::text[], ${counts.link}::text[], ${counts.clicks}::bigint[])
            AS r(batch_id, link_id, clicks)
          JOIN claim ON claim.id = r.batch_id
          WHERE r.clicks > 0
          GROUP BY r.link_id
        ) c
        JOIN links l ON l.id = c.link_id
        ORDER BY l.id
        ON CONFLICT (link_id)
        DO UPDATE SET click_count = link_clicks.click_count + EXCLUDED.click_count
      ), scoped AS (
        SELECT l.app_id COLLATE "C" AS app_id, l.environment COLLATE "C" AS environment,
          s.scope, r.hour, DATE '1970-01-01' + (r.hour / 24)::int AS day, r.bot, r.country,
          r.platform, r.os, r.browser, r.referrer, r.utm_source, r.utm_medium, r.utm_campaign,
          r.source, r.clicks
        FROM unnest(
          ${dims.batch}::text[], ${dims.link}::text[], ${dims.hour}::bigint[], ${dims.bot}::bool[],
          ${dims.country}::text[] COLLATE "C", ${dims.platform}::text[] COLLATE "C",
          ${dims.os}::text[] COLLATE "C", ${dims.browser}::text[] COLLATE "C",
          ${dims.referrer}::text[] COLLATE "C", ${dims.utmSource}::text[] COLLATE "C",
          ${dims.medium}::text[] COLLATE "C", ${dims.campaign}::text[] COLLATE "C",
          ${dims.source}::text[] COLLATE "C", ${dims.clicks}::bigint[]
        ) AS r(batch_id, link_id, hour, bot, country, platform, os, browser, referrer,
          utm_source, utm_medium, utm_campaign, source, clicks)
        JOIN claim ON claim.id = r.batch_id
        JOIN links l ON l.id = r.link_id
        CROSS JOIN LATERAL (VALUES (r.link_id COLLATE "C"), ('' COLLATE "C")) AS s(scope)
        WHERE r.clicks > 0
      ), offered AS (
        SELECT s.app_id, s.environment, s.scope, s.day, v.dimension, v.value,
          sum(s.clicks) AS clicks
        FROM scoped s
        CROSS JOIN LATERAL (VALUES
          ('referrer', s.referrer), ('utm_source', s.utm_source),
          ('utm_medium', s.utm_medium), ('utm_campaign', s.utm_campaign)
        ) AS v(dimension, value)
        WHERE v.value NOT IN (${DIRECT_REFERRER}, ${NO_UTM}, ${OTHER_VALUE})
        GROUP BY s.app_id, s.environment, s.scope, s.day, v.dimension, v.value
      ), fresh AS (
        SELECT o.app_id, o.environment, o.scope, o.day, o.dimension, o.value,
          row_number() OVER (
            PARTITION BY o.app_id, o.environment, o.scope, o.day, o.dimension
            ORDER BY o.clicks DESC, o.value
          ) AS rank
        FROM offered o
        WHERE NOT EXISTS (
          SELECT 1 FROM click_dimension_values d
          WHERE d.app_id = o.app_id AND d.environment = o.environment AND d.link_id = o.scope
            AND d.day = o.day AND d.dimension = o.dimension AND d.value = o.value
        )
      ), admitted AS (
        INSERT INTO click_dimension_values (app_id, environment, link_id, day, dimension, value)
        SELECT f.app_id, f.environment, f.scope, f.day, f.dimension, f.value
        FROM fresh f
        WHERE f.rank + (
          SELECT count(*) FROM click_dimension_values d
          WHERE d.app_id = f.app_id AND d.environment = f.environment AND d.link_id = f.scope
            AND d.day = f.day AND d.dimension = f.dimension
        ) <= CASE WHEN f.scope = '' THEN ${APP_DAY_VALUE_CAP}::int ELSE ${LINK_DAY_VALUE_CAP}::int END
        ORDER BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (app_id, environment, link_id, day, dimension, value)
        DO UPDATE SET value = EXCLUDED.value
        RETURNING app_id, environment, link_id AS scope, day, dimension, value
      ), folded AS (
        SELECT f.app_id, f.environment, f.scope, f.day, f.dimension, f.value FROM fresh f
        EXCEPT
        SELECT a.app_id, a.environment, a.scope, a.day, a.dimension, a.value FROM admitted a
      ), capped AS (
        SELECT s.app_id, s.environment, s.scope, s.hour, s.day, s.bot, s.country, s.platform,
          s.os, s.browser,
          ${cappedValue('referrer')} AS referrer,
          ${cappedValue('utm_source')} AS utm_source,
          ${cappedValue('utm_medium')} AS utm_medium,
          ${cappedValue('utm_campaign')} AS utm_campaign,
          s.source, s.clicks
        FROM scoped s
      ), hours AS (
        INSERT INTO click_rollup_hours AS t (app_id, environment, link_id, hour, ${DIMENSION_COLUMNS},
          clicks, bot_clicks)
        SELECT app_id, environment, scope, to_timestamp(hour * 3600), ${DIMENSION_COLUMNS},
          ${PEOPLE}, ${BOTS}
        FROM capped
        GROUP BY app_id, environment, scope, hour, ${DIMENSION_COLUMNS}
        ORDER BY ${KEY_ORDER}
        ON CONFLICT (app_id, environment, link_id, hour, ${DIMENSION_COLUMNS})
        DO UPDATE SET clicks = t.clicks + EXCLUDED.clicks,
          bot_clicks = t.bot_clicks + EXCLUDED.bot_clicks
      ), days AS (
        INSERT INTO click_rollup_days AS t (app_id, environment, link_id, day, ${DIMENSION_COLUMNS},
          clicks, bot_clicks)
        SELECT app_id, environment, scope, day, ${DIMENSION_COLUMNS}, ${PEOPLE}, ${BOTS}
        FROM capped
        GROUP BY app_id, environment, scope, day, ${DIMENSION_COLUMNS}
        ORDER BY ${KEY_ORDER}
        ON CONFLICT (app_id, environment, link_id, day, ${DIMENSION_COLUMNS})
        DO UPDATE SET clicks = t.clicks + EXCLUDED.clicks,
          bot_clicks = t.bot_clicks + EXCLUDED.bot_clicks
      ), dimension_days AS (
        INSERT INTO click_dimension_days AS t (app_id, environment, link_id, day, dimension,
          value, clicks, bot_clicks)
        SELECT c.app_id, c.environment, c.scope, c.day, v.dimension, v.value,
          coalesce(sum(c.clicks) FILTER (WHERE NOT c.bot), 0),
          coalesce(sum(c.clicks) FILTER (WHERE c.bot), 0)
        FROM capped c
        CROSS JOIN LATERAL (VALUES ${DIMENSION_VALUES}) AS v(dimension, value)
        WHERE c.scope = ''
        GROUP BY 1, 2, 3, 4, 5, 6
        ORDER BY 1, 2, 3, 4, 5, 6
        ON CONFLICT (app_id, environment, link_id, day, dimension, value)
        DO UPDATE SET clicks = t.clicks + EXCLUDED.clicks,
          bot_clicks = t.bot_clicks + EXCLUDED.bot_clicks
      ), totals AS (
        SELECT app_id, environment, scope, day, sum(clicks) AS clicks, sum(bot_clicks) AS bot_clicks,
          max(visitors) AS visitors
        FROM (
          SELECT app_id, environment, scope, day, ${PEOPLE} AS clicks, ${BOTS} AS bot_clicks,
            0::bigint AS visitors
          FROM capped
          GROUP BY app_id, environment, scope, day
          UNION ALL
          SELECT l.app_id, l.environment, u.link_id, DATE '1970-01-01' + u.day, 0, 0, u.visitors
          FROM unnest(
            ${visitors.map((v) => v.linkId)}::text[], ${visitors.map((v) => v.day)}::int[],
            ${visitors.map((v) => v.visitors)}::bigint[]
          ) AS u(link_id, day, visitors)
          JOIN links l ON l.id = u.link_id
        ) x
        GROUP BY app_id, environment, scope, day
      ), link_days AS (
        INSERT INTO link_click_days AS t (app_id, environment, link_id, day, clicks, bot_clicks,
          unique_visitors)
        SELECT app_id, environment, scope, day, clicks, bot_clicks, visitors
        FROM totals
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, environment, link_id, day)
        DO UPDATE SET clicks = t.clicks + EXCLUDED.clicks,
          bot_clicks = t.bot_clicks + EXCLUDED.bot_clicks,
          unique_visitors = GREATEST(t.unique_visitors, EXCLUDED.unique_visitors),
          -- A click added to a day whose dimension rows were derived: derive them again.
          dimensions_derived = t.dimensions_derived
            AND EXCLUDED.clicks + EXCLUDED.bot_clicks = 0
      ), months AS (
        INSERT INTO link_click_months AS t (app_id, environment, link_id, month, clicks, bot_clicks)
        SELECT app_id, environment, scope, date_trunc('month', day)::date, sum(clicks),
          sum(bot_clicks)
        FROM totals
        GROUP BY 1, 2, 3, 4
        HAVING sum(clicks) + sum(bot_clicks) > 0
        ORDER BY 1, 2, 3, 4
        ON CONFLICT (app_id, environment, link_id, month)
        DO UPDATE SET clicks = t.clicks + EXCLUDED.clicks,
          bot_clicks = t.bot_clicks + EXCLUDED.bot_clicks
      )
      SELECT id FROM claim
    `.execute(this.db);
    return new Set(result.rows.map((row) => row.id));
  }

  /** Forgets ledger rows old enough that no batch they guard can still be waiting in Redis. */
  async pruneAppliedBefore(olderThan: Date): Promise<number> {
    const result = await this.db
      .deleteFrom('link_click_batches')
      .where('applied_at', '<', olderThan)
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
