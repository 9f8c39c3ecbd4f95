import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '@linkservice/db';

/**
 * Adds one batch of counted clicks to links.click_count, at most once per `batchId`, in a
 * single statement (so atomically): the batch id is claimed in link_click_batches and the
 * counters move only if the claim succeeded. A concurrent claimer of the same id waits for the
 * first to commit and then claims nothing. Rows are locked in id order so two flushers with
 * overlapping batches cannot deadlock. updated_at stays: a click is not an edit.
 *
 * Returns false when the batch had already been applied.
 */
export async function applyClickBatch(
  db: Kysely<Database>,
  batchId: string,
  counts: ReadonlyMap<string, number>,
): Promise<boolean> {
  const ids = [...counts.keys()];
  const clicks = ids.map((id) => counts.get(id) ?? 0);
  const result = await sql<{ claimed: number }>`
    WITH claim AS (
      INSERT INTO link_click_batches (id) VALUES (${batchId})
      ON CONFLICT (id) DO NOTHING
      RETURNING id
    ), locked AS (
      SELECT l.id, c.clicks
      FROM unnest(${ids}::text[], ${clicks}::bigint[]) AS c(id, clicks)
      JOIN links l ON l.id = c.id
      WHERE EXISTS (SELECT 1 FROM claim)
      ORDER BY l.id
      FOR UPDATE OF l
    ), counted AS (
      UPDATE links SET click_count = links.click_count + locked.clicks
      FROM locked
      WHERE links.id = locked.id
    )
    SELECT count(*)::int AS claimed FROM claim
  `.execute(db);
  return (result.rows[0]?.claimed ?? 0) > 0;
}

/** Forgets ledger rows old enough that no batch they guard can still be waiting in Redis. */
export async function pruneClickBatches(db: Kysely<Database>, olderThan: Date): Promise<number> {
  const result = await db
    .deleteFrom('link_click_batches')
    .where('applied_at', '<', olderThan)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
