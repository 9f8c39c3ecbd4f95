import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '@linkservice/db';

/** Clicks counted per link id, applied once under `id` (link_click_batches). */
export interface ClickBatch {
  id: string;
  counts: ReadonlyMap<string, number>;
}

/** link_clicks and its ledger of applied batches, as the click flusher writes them. */
export class ClickBatchesRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Adds batches of counted clicks to link_clicks, each at most once per id, in a single
   * statement (so atomically): the batch ids are claimed in link_click_batches and the counts of
   * the claimed ones move (summed per link). A concurrent claimer of the same id waits for the
   * first to commit and then claims nothing.
   *
   * Only link_clicks is written (see the link-clicks migration): a link's first click inserts its
   * row, later ones add to it. The links row is only read (for the app and environment a new row
   * copies, and to skip ids of links that do not exist); no links row or index gets a new version,
   * so click traffic leaves the links table, its search index and updated_at alone. Rows are
   * upserted in link id order, so two flushers with overlapping batches lock them in the same
   * order and cannot deadlock.
   *
   * Returns the ids this call claimed; one missing had already been applied.
   */
  async apply(batches: readonly ClickBatch[]): Promise<Set<string>> {
    if (batches.length === 0) return new Set();
    const batchIds: string[] = [];
    const linkIds: string[] = [];
    const clicks: number[] = [];
    for (const batch of batches) {
      for (const [linkId, count] of batch.counts) {
        batchIds.push(batch.id);
        linkIds.push(linkId);
        clicks.push(count);
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
          FROM unnest(${batchIds}::text[], ${linkIds}::text[], ${clicks}::bigint[])
            AS r(batch_id, link_id, clicks)
          JOIN claim ON claim.id = r.batch_id
          WHERE r.clicks > 0
          GROUP BY r.link_id
        ) c
        JOIN links l ON l.id = c.link_id
        ORDER BY l.id
        ON CONFLICT (link_id)
        DO UPDATE SET click_count = link_clicks.click_count + EXCLUDED.click_count
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
