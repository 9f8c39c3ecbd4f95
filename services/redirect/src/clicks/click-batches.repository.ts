import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '@linkservice/db';
import type { PendingToken } from './click-counter';

/** One batch of counted clicks (link id -> clicks) and the click tokens minted with them. */
export interface ClickBatch {
  counts: ReadonlyMap<string, number>;
  tokens: readonly PendingToken[];
}

/**
 * Adds one batch of counted clicks to links.click_count and inserts its click tokens, at most
 * once per `batchId`, in a single statement (so atomically): the batch id is claimed in
 * link_click_batches and the counters move and the tokens land only if the claim succeeded. A
 * concurrent claimer of the same id waits for the first to commit and then claims nothing. Rows
 * are locked in id order so two flushers with overlapping batches cannot deadlock; a token's
 * link is always among them (its click is in the same batch, and a token-only link is locked
 * with zero clicks), so its foreign key takes no lock of its own. A token takes its app and
 * environment from its link and expires `tokenTtlSeconds` after its click; one already stored
 * (the same click carried by two batches after a Redis timeout) is kept as it is.
 * updated_at stays: a click is not an edit.
 *
 * Returns false when the batch had already been applied.
 */
export async function applyClickBatch(
  db: Kysely<Database>,
  batchId: string,
  { counts, tokens }: ClickBatch,
  tokenTtlSeconds: number,
): Promise<boolean> {
  const clicksByLink = new Map(counts);
  for (const { linkId } of tokens) if (!clicksByLink.has(linkId)) clicksByLink.set(linkId, 0);
  const ids = [...clicksByLink.keys()];
  const clicks = [...clicksByLink.values()];
  const tokenHashes = tokens.map((token) => token.tokenHash);
  const tokenLinks = tokens.map((token) => token.linkId);
  const clickedAt = tokens.map((token) => token.clickedAt);
  const result = await sql<{ claimed: number }>`
    WITH claim AS (
      INSERT INTO link_click_batches (id) VALUES (${batchId})
      ON CONFLICT (id) DO NOTHING
      RETURNING id
    ), locked AS (
      SELECT l.id, l.app_id, l.environment, c.clicks
      FROM unnest(${ids}::text[], ${clicks}::bigint[]) AS c(id, clicks)
      JOIN links l ON l.id = c.id
      WHERE EXISTS (SELECT 1 FROM claim)
      ORDER BY l.id
      FOR UPDATE OF l
    ), counted AS (
      UPDATE links SET click_count = links.click_count + locked.clicks
      FROM locked
      WHERE links.id = locked.id AND locked.clicks > 0
    ), minted AS (
      INSERT INTO click_tokens (token_hash, link_id, app_id, environment, clicked_at, expires_at)
      SELECT decode(t.hash, 'hex'), locked.id, locked.app_id, locked.environment,
             timestamptz 'epoch' + t.clicked_ms * interval '1 millisecond',
             timestamptz 'epoch' + t.clicked_ms * interval '1 millisecond'
               + ${tokenTtlSeconds}::int * interval '1 second'
      FROM unnest(${tokenHashes}::text[], ${tokenLinks}::text[], ${clickedAt}::bigint[])
        AS t(hash, link_id, clicked_ms)
      JOIN locked ON locked.id = t.link_id
      ON CONFLICT (token_hash) DO NOTHING
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
