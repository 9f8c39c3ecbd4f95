import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * One counter of an app's links, kept by one mechanism. apps.link_count (raised by the worker's
 * insert, read for the plan allowance) and link_totals (per environment, kept by a trigger, read
 * for unfiltered list totals) counted the same links twice, and a bulk load outside the worker
 * (the bench seeder) had to patch the first by hand. Now a statement-level trigger on links keeps
 * apps.live_link_count and apps.test_link_count:
 * - The trigger sees every insert path and runs in the inserting transaction, so the counts a
 *   statement reads always match the links its snapshot sees (exact list totals), and a bulk
 *   load is counted like a creation. Links are never deleted, so only inserts move them.
 * - The counts are columns of the app row, not rows of another table, because the worker reads
 *   them in the statement that locks that row (FOR NO KEY UPDATE). Under READ COMMITTED a
 *   statement that waited for the lock re-reads only the locked row (EvalPlanQual); a subquery on
 *   another table would still see the snapshot from before the wait, miss the links the previous
 *   lock holder committed, and let concurrent creations exceed the allowance.
 * - The worker holds that lock when its insert fires the trigger, so the trigger's UPDATE waits
 *   for nothing; other inserters serialise on the row as they did on link_totals' rows.
 *
 * Rolling upgrade: link_totals stays, for one release, as a view over the new columns, so a
 * gateway of the previous release still lists with exact totals while it is replaced. A worker
 * of the previous release fails its jobs (apps.link_count is gone); BullMQ retries them until
 * their deadline and the gateway answers 503 with nothing created, until the new workers run.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // Lock out inserts for the whole change so no link is counted twice or missed. apps first:
  // a creation locks its app row before it inserts links, so taking links first could deadlock
  // with one that has claimed and is about to insert.
  await sql`LOCK TABLE apps IN ACCESS EXCLUSIVE MODE`.execute(db);
  await sql`LOCK TABLE links IN SHARE MODE`.execute(db);

  await db.schema
    .alterTable('apps')
    .addColumn('live_link_count', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('test_link_count', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute();
  // Counted from the links themselves, under the locks: exact whatever the old counters said.
  await sql`
    UPDATE apps SET live_link_count = counted.live, test_link_count = counted.test
    FROM (SELECT app_id,
                 count(*) FILTER (WHERE environment = 'live') AS live,
                 count(*) FILTER (WHERE environment = 'test') AS test
          FROM links GROUP BY app_id) AS counted
    WHERE apps.id = counted.app_id`.execute(db);

  await sql`DROP TRIGGER links_count_inserts ON links`.execute(db);
  await sql`DROP FUNCTION link_totals_after_insert()`.execute(db);
  await db.schema.dropTable('link_totals').execute();
  await db.schema.alterTable('apps').dropColumn('link_count').execute();
  // What the previous release's gateway reads for list totals (see above); nothing here reads it.
  await sql`
    CREATE VIEW link_totals AS
    SELECT id AS app_id, 'live'::text AS environment, live_link_count AS total FROM apps
    UNION ALL
    SELECT id AS app_id, 'test'::text AS environment, test_link_count AS total FROM apps`.execute(
    db,
  );

  await sql`
    CREATE FUNCTION app_link_counts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE apps SET live_link_count = live_link_count + added.live,
                      test_link_count = test_link_count + added.test
      FROM (SELECT app_id,
                   count(*) FILTER (WHERE environment = 'live') AS live,
                   count(*) FILTER (WHERE environment = 'test') AS test
            FROM inserted_links GROUP BY app_id) AS added
      WHERE apps.id = added.app_id;
      RETURN NULL;
    END
    $$`.execute(db);
  await sql`
    CREATE TRIGGER links_count_inserts AFTER INSERT ON links
    REFERENCING NEW TABLE AS inserted_links
    FOR EACH STATEMENT EXECUTE FUNCTION app_link_counts_after_insert()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`LOCK TABLE apps IN ACCESS EXCLUSIVE MODE`.execute(db);
  await sql`LOCK TABLE links IN SHARE MODE`.execute(db);
  await sql`DROP VIEW link_totals`.execute(db);
  await sql`DROP TRIGGER links_count_inserts ON links`.execute(db);
  await sql`DROP FUNCTION app_link_counts_after_insert()`.execute(db);

  await db.schema
    .alterTable('apps')
    .addColumn('link_count', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  await sql`UPDATE apps SET link_count = live_link_count + test_link_count`.execute(db);
  await db.schema
    .createTable('link_totals')
    .addColumn('app_id', 'text', (col) => col.notNull().references('apps.id'))
    .addColumn('environment', 'text', (col) =>
      col.notNull().check(sql`environment IN ('live', 'test')`),
    )
    .addColumn('total', 'bigint', (col) => col.notNull())
    .addPrimaryKeyConstraint('link_totals_pkey', ['app_id', 'environment'])
    .execute();
  await sql`
    INSERT INTO link_totals (app_id, environment, total)
    SELECT id, 'live', live_link_count FROM apps WHERE live_link_count > 0
    UNION ALL
    SELECT id, 'test', test_link_count FROM apps WHERE test_link_count > 0`.execute(db);
  await sql`
    CREATE FUNCTION link_totals_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO link_totals (app_id, environment, total)
      SELECT app_id, environment, count(*) FROM inserted_links GROUP BY app_id, environment
      ON CONFLICT (app_id, environment)
      DO UPDATE SET total = link_totals.total + EXCLUDED.total;
      RETURN NULL;
    END
    $$`.execute(db);
  await sql`
    CREATE TRIGGER links_count_inserts AFTER INSERT ON links
    REFERENCING NEW TABLE AS inserted_links
    FOR EACH STATEMENT EXECUTE FUNCTION link_totals_after_insert()`.execute(db);

  await db.schema.alterTable('apps').dropColumn('live_link_count').execute();
  await db.schema.alterTable('apps').dropColumn('test_link_count').execute();
}
