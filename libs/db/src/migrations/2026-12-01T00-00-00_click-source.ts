import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * The `source` dimension of click analytics: `link` (a tap of the plain link URL) or `qr` (a scan
 * of the link's QR code, whose URL carries the scan marker `qr=1`).
 *
 * - click_rollup_hours / click_rollup_days get `source`, 'link' for every row so far (no code
 *   was scanned before this), and a primary key that includes it, last (the flusher upserts in
 *   key order). On the partitioned parents: ADD COLUMN reaches every partition (a constant
 *   default: no rewrite), and the key dropped and added on the parent is dropped and built on
 *   every partition (the worker's later months copy it at ATTACH). Building the keys takes time
 *   in proportion to the rollups, under an exclusive lock: flushes wait meanwhile (the clicks
 *   stay in Redis) and so do analytics reads.
 * - click_dimension_days: rows of dimension 'source', value 'link', for every scope and day it
 *   has rows for (a scope-day's clicks are those of any one dimension: 'platform' has the
 *   fewest values), so a breakdown by source over days before this adds up to the totals.
 *
 * Rolling upgrade: a flusher of the previous release upserts the rollups with
 * `ON CONFLICT (…, utm_campaign)`, which no unique index matches any more: its whole flush
 * statement fails (one statement: nothing of it is written, its batches are not claimed) and it
 * retries. Its batches stay in Redis until the new release's redirects take them over
 * (CLICK_RECOVERY_AFTER_MS after they were taken) and apply them, once each (the batch ledger):
 * no click is lost, the previous release's clicks and analytics are only written late. Keeping
 * a unique index on the old columns instead would forbid a scan and a tap in the same
 * combination, the very rows this adds. The previous release's pending-hash fields (no source)
 * are read as `link` (services/redirect unsourced-field.compat.ts).
 */
const ROLLUPS = [
  { table: 'click_rollup_hours', bucket: 'hour' },
  { table: 'click_rollup_days', bucket: 'day' },
] as const;

const DIMENSIONS = 'country, platform, os, browser, referrer, utm_source, utm_medium, utm_campaign';

function keyOf(bucket: string, withSource: boolean) {
  return sql.raw(
    `app_id, environment, link_id, ${bucket}, ${DIMENSIONS}${withSource ? ', source' : ''}`,
  );
}

export async function up(db: Kysely<any>): Promise<void> {
  // Every table first, before a flush can hold one of them and wait for another.
  await sql`
    LOCK TABLE click_rollup_hours, click_rollup_days, click_dimension_days
    IN ACCESS EXCLUSIVE MODE`.execute(db);
  for (const { table, bucket } of ROLLUPS) {
    await sql`
      ALTER TABLE ${sql.table(table)}
      ADD COLUMN source text COLLATE "C" NOT NULL DEFAULT 'link'`.execute(db);
    await sql`
      ALTER TABLE ${sql.table(table)}
      DROP CONSTRAINT ${sql.ref(`${table}_pkey`)},
      ADD CONSTRAINT ${sql.ref(`${table}_pkey`)} PRIMARY KEY (${keyOf(bucket, true)})`.execute(db);
  }
  await sql`
    INSERT INTO click_dimension_days (app_id, environment, link_id, day, dimension, value, clicks,
      bot_clicks)
    SELECT app_id, environment, link_id, day, 'source', 'link', sum(clicks), sum(bot_clicks)
    FROM click_dimension_days
    WHERE dimension = 'platform'
    GROUP BY app_id, environment, link_id, day`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    LOCK TABLE click_rollup_hours, click_rollup_days, click_dimension_days
    IN ACCESS EXCLUSIVE MODE`.execute(db);
  await sql`DELETE FROM click_dimension_days WHERE dimension = 'source'`.execute(db);
  for (const { table, bucket } of ROLLUPS) {
    const t = sql.table(table);
    const key = keyOf(bucket, false);
    // Scans fold into the taps of the same combination: the old key has room for one row.
    await sql`
      WITH scans AS (DELETE FROM ${t} WHERE source <> 'link' RETURNING *)
      INSERT INTO ${t} AS t (${key}, source, clicks, bot_clicks)
      SELECT ${key}, 'link', sum(clicks), sum(bot_clicks) FROM scans
      GROUP BY ${key}
      ON CONFLICT (${keyOf(bucket, true)})
      DO UPDATE SET clicks = t.clicks + EXCLUDED.clicks,
        bot_clicks = t.bot_clicks + EXCLUDED.bot_clicks`.execute(db);
    await sql`
      ALTER TABLE ${t}
      DROP CONSTRAINT ${sql.ref(`${table}_pkey`)},
      ADD CONSTRAINT ${sql.ref(`${table}_pkey`)} PRIMARY KEY (${key})`.execute(db);
    await sql`ALTER TABLE ${t} DROP COLUMN source`.execute(db);
  }
}
