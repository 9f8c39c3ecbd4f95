import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * Click counts move out of the links table into link_clicks, a narrow table of their own.
 *
 * Why: the click flusher's `UPDATE links SET click_count` could never be a HOT update, because
 * links_clicks_idx indexed click_count. Every flush wrote a new version of each clicked link's
 * wide row (deep_link_data, search_text) plus an entry in every index of links, the trigram
 * search index included: after 25,464 flushes over 1,000 links, 0 HOT updates, the table at
 * 4.5 MB and the search index at 5.7 MB, and search p50 from 1.98 ms to 2.39-7.0 ms. Now a flush
 * writes only link_clicks (link id, app, environment, count: ~100 bytes a row, a quarter of the
 * bench's links rows) and its two indexes; the links table and its indexes see no click at all.
 *
 * - A link has a row only once it was clicked (click_count > 0): creation writes nothing here,
 *   and reads take a missing row as 0.
 * - app_id and environment are copied from the link (both never change) so that
 *   link_clicks_order_idx walks one app's clicked links by count for sort=clicks without
 *   touching links.
 * - links_clicks_idx (app_id, environment, click_count DESC, id) is replaced by
 *   links_app_id_order_idx (app_id, environment, id): sort=clicks lists never-clicked links last,
 *   by id, and walks that index for them. The links table keeps the same number of indexes, so
 *   an insert costs what it did, and id never changes, so no index of links holds a value that
 *   moves with clicks.
 *
 * Rolling upgrade: links.click_count stays for one release, read and written only by the
 * previous release. A flusher of the previous release still adds to it; a trigger forwards each
 * such increment into link_clicks in the same statement, so its batches (claimed in
 * link_click_batches in that statement) are counted exactly once where the new release reads
 * them. A gateway of the previous release reads the column's counts as of this migration plus
 * what its own flushers added (stale, never an error) until it is replaced. The next release
 * drops the column and the trigger.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // Blocks writes to links (the previous release's flushes, creations) for the change, so no
  // increment falls between the copy and the trigger; reads go on until DROP INDEX at the end.
  await sql`LOCK TABLE links IN SHARE ROW EXCLUSIVE MODE`.execute(db);

  await sql`
    CREATE TABLE link_clicks (
      link_id text PRIMARY KEY REFERENCES links (id) ON DELETE CASCADE,
      app_id text NOT NULL,
      environment text NOT NULL,
      click_count bigint NOT NULL CHECK (click_count > 0)
    )`.execute(db);
  await sql`
    INSERT INTO link_clicks (link_id, app_id, environment, click_count)
    SELECT id, app_id, environment, click_count FROM links WHERE click_count > 0`.execute(db);
  await sql`CREATE INDEX link_clicks_order_idx
    ON link_clicks (app_id, environment, click_count DESC, link_id ASC)`.execute(db);

  await sql`
    CREATE FUNCTION link_clicks_forward_column() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO link_clicks (link_id, app_id, environment, click_count)
      VALUES (NEW.id, NEW.app_id, NEW.environment, NEW.click_count - OLD.click_count)
      ON CONFLICT (link_id)
      DO UPDATE SET click_count = link_clicks.click_count + EXCLUDED.click_count;
      RETURN NULL;
    END
    $$`.execute(db);
  await sql`
    CREATE TRIGGER links_click_count_forward AFTER UPDATE OF click_count ON links
    FOR EACH ROW WHEN (NEW.click_count > OLD.click_count)
    EXECUTE FUNCTION link_clicks_forward_column()`.execute(db);

  await sql`CREATE INDEX links_app_id_order_idx ON links (app_id, environment, id)`.execute(db);
  await sql`DROP INDEX links_clicks_idx`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`LOCK TABLE links IN SHARE ROW EXCLUSIVE MODE`.execute(db);
  await sql`DROP TRIGGER links_click_count_forward ON links`.execute(db);
  await sql`DROP FUNCTION link_clicks_forward_column()`.execute(db);
  // link_clicks holds every count (the column's as of `up`, plus all since): it wins.
  await sql`
    UPDATE links SET click_count = 0
    WHERE click_count <> 0
      AND NOT EXISTS (SELECT 1 FROM link_clicks WHERE link_clicks.link_id = links.id)`.execute(db);
  await sql`
    UPDATE links SET click_count = link_clicks.click_count
    FROM link_clicks
    WHERE links.id = link_clicks.link_id AND links.click_count <> link_clicks.click_count`.execute(
    db,
  );
  await sql`CREATE INDEX links_clicks_idx ON links (app_id, environment, click_count DESC, id ASC)`.execute(
    db,
  );
  await sql`DROP INDEX links_app_id_order_idx`.execute(db);
  await sql`DROP TABLE link_clicks`.execute(db);
}
