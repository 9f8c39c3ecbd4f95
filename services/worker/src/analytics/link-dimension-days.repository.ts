import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { ANALYTICS_DIMENSIONS } from '@linkservice/contracts';

/** Each dimension of a click_rollup_days row `c` as (dimension, value): one row per dimension. */
const DIMENSION_VALUES = sql.join(
  ANALYTICS_DIMENSIONS.map((d) => sql`(${d.column}, ${sql.ref(`c.${d.column}`)})`),
);

/**
 * Derives links' click_dimension_days rows of finished days from their click_rollup_days rows
 * (see the click-analytics migration): the flusher keeps only the app's dimension rows with
 * every click, so a link's breakdown over many days reads a few rows per day and value instead
 * of every combination it had.
 */
/**
 * Days with fewer clicks are not derived. A literal in the statement: the partial index
 * link_click_days_derive_idx has the same predicate, and only a literal lets the planner use it.
 */
export const DERIVE_MIN_CLICKS = 1_000;

export class LinkDimensionDaysRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Derives at most `limit` link-days that are over (UTC), had at least DERIVE_MIN_CLICKS
   * clicks, and are not derived (or got a late click since), the oldest first
   * (link_click_days_derive_idx), and marks them derived; returns how many. A quieter day has
   * fewer combinations than clicks: its breakdowns read them as they are.
   *
   * In one transaction, two statements: the first locks the link-days (SKIP LOCKED: another
   * worker takes others), so no flush can add to them until this commits; the second, with a
   * snapshot taken after the locks, sees every click committed to them. A flush that wrote
   * rollup rows before blocking on a lock adds to the link-day after this commits, and clears
   * its mark again: the day is derived anew next time, and until then read from the rollups.
   */
  async deriveSlice(limit: number): Promise<number> {
    return this.db.transaction().execute(async (tx) => {
      const due = await sql<{ app_id: string; environment: string; link_id: string; day: string }>`
        SELECT app_id, environment, link_id, day FROM link_click_days
        WHERE link_id <> '' AND NOT dimensions_derived
          AND clicks + bot_clicks >= ${sql.lit(DERIVE_MIN_CLICKS)}
          AND day < (now() AT TIME ZONE 'UTC')::date
        ORDER BY day, app_id, environment, link_id
        LIMIT ${limit}
        FOR UPDATE SKIP LOCKED`.execute(tx);
      if (due.rows.length === 0) return 0;
      const column = (name: 'app_id' | 'environment' | 'link_id' | 'day') =>
        due.rows.map((row) => row[name]);
      await sql`
        WITH due AS (
          SELECT * FROM unnest(
            ${column('app_id')}::text[], ${column('environment')}::text[],
            ${column('link_id')}::text[], ${column('day')}::date[]
          ) AS d(app_id, environment, link_id, day)
        ), derived AS (
          INSERT INTO click_dimension_days AS t (app_id, environment, link_id, day, dimension,
            value, clicks, bot_clicks)
          SELECT c.app_id, c.environment, c.link_id, c.day, v.dimension, v.value, sum(c.clicks),
            sum(c.bot_clicks)
          FROM due
          JOIN click_rollup_days c
            ON c.app_id = due.app_id AND c.environment = due.environment
            AND c.link_id = due.link_id AND c.day = due.day
          CROSS JOIN LATERAL (VALUES ${DIMENSION_VALUES}) AS v(dimension, value)
          GROUP BY 1, 2, 3, 4, 5, 6
          ORDER BY 1, 2, 3, 4, 5, 6
          ON CONFLICT (app_id, environment, link_id, day, dimension, value)
          DO UPDATE SET clicks = EXCLUDED.clicks, bot_clicks = EXCLUDED.bot_clicks
        )
        UPDATE link_click_days l SET dimensions_derived = true
        FROM due
        WHERE l.app_id = due.app_id AND l.environment = due.environment
          AND l.link_id = due.link_id AND l.day = due.day`.execute(tx);
      return due.rows.length;
    });
  }
}
