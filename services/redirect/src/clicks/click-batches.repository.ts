import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '@linkservice/db';

/** link_clicks and its ledger of applied batches, as the click flusher writes them. */
export class ClickBatchesRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Adds one batch of counted clicks to link_clicks, at most once per `batchId`, in a single
   * statement (so atomically): the batch id is claimed in link_click_batches and the counts move
   * only if the claim succeeded. A concurrent claimer of the same id waits for the first to commit
   * and then claims nothing.
   *
   * Only link_clicks is written (see the link-clicks migration): a link's first click inserts its
   * row, later ones add to it. The links row is only read (for the app and environment a new row
   * copies, and to skip ids of links that do not exist); no links row or index gets a new version,
   * so click traffic leaves the links table, its search index and updated_at alone. Rows are
   * upserted in link id order, so two flushers with overlapping batches lock them in the same
   * order and cannot deadlock.
   *
   * Returns false when the batch had already been applied.
   */
  async apply(batchId: string, counts: ReadonlyMap<string, number>): Promise<boolean> {
    const ids = [...counts.keys()];
    const clicks = ids.map((id) => counts.get(id) ?? 0);
    const result = await sql<{ claimed: number }>`
      WITH claim AS (
        INSERT INTO link_click_batches (id) VALUES (${batchId})
        ON CONFLICT (id) DO NOTHING
        RETURNING id
      ), counted AS (
        INSERT INTO link_clicks (link_id, app_id, environment, click_count)
        SELECT l.id, l.app_id, l.environment, c.clicks
        FROM unnest(${ids}::text[], ${clicks}::bigint[]) AS c(id, clicks)
        JOIN links l ON l.id = c.id
        WHERE EXISTS (SELECT 1 FROM claim) AND c.clicks > 0
        ORDER BY l.id
        ON CONFLICT (link_id)
        DO UPDATE SET click_count = link_clicks.click_count + EXCLUDED.click_count
      )
      SELECT count(*)::int AS claimed FROM claim
    `.execute(this.db);
    return (result.rows[0]?.claimed ?? 0) > 0;
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
