import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * Links per app and environment, kept by a statement-level trigger, so an unfiltered list can
 * report its exact total without counting every row (a million links took 150-250 ms to count).
 * Links are never deleted, so only inserts move it. The trigger sees every insert path (the
 * worker, bulk loads), and its upsert runs in the inserting transaction, so the total a
 * statement reads always matches the rows the same snapshot sees.
 */
export async function up(db: Kysely<any>): Promise<void> {
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

  // Lock out inserts while backfilling so no link is counted twice or missed.
  await sql`LOCK TABLE links IN SHARE MODE`.execute(db);
  await sql`
    INSERT INTO link_totals (app_id, environment, total)
    SELECT app_id, environment, count(*) FROM links GROUP BY app_id, environment`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TRIGGER links_count_inserts ON links`.execute(db);
  await sql`DROP FUNCTION link_totals_after_insert()`.execute(db);
  await db.schema.dropTable('link_totals').execute();
}
