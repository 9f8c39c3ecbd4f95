import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * Lists filtered by status at 1M links read every row of the app without these (a sequential
 * scan of the whole table, 300-550 ms, even when nothing is archived or expired). Both are
 * partial, so they hold only the links that are archived, or that can expire, and cost nothing
 * for the rest:
 * - links_archived_idx answers status=archived and counts the archived links (index only).
 * - links_expiring_idx answers status=expired (expires_at <= now() implies IS NOT NULL, so the
 *   planner proves the predicate) and counts the expired links by a range of expires_at.
 * Active links are then counted as the stored total minus those two counts (see the gateway's
 * LinksRepository.list) instead of by reading nearly every row.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE INDEX links_archived_idx ON links (app_id, environment)
    WHERE archived_at IS NOT NULL`.execute(db);
  await sql`CREATE INDEX links_expiring_idx ON links (app_id, environment, expires_at)
    WHERE archived_at IS NULL AND expires_at IS NOT NULL`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP INDEX links_expiring_idx`.execute(db);
  await sql`DROP INDEX links_archived_idx`.execute(db);
}
