import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

export async function up(db: Kysely<any>): Promise<void> {
  // What the link host serves at /.well-known/ for one app and environment. The iOS pair and the
  // Android pair are set independently (linkctl app set-ios / set-android); each is all or nothing.
  await db.schema
    .createTable('app_associations')
    .addColumn('app_id', 'text', (col) => col.notNull().references('apps.id'))
    .addColumn('environment', 'text', (col) =>
      col.notNull().check(sql`environment IN ('live', 'test')`),
    )
    .addColumn('ios_team_id', 'text')
    .addColumn('ios_bundle_id', 'text')
    .addColumn('android_package_name', 'text')
    .addColumn('android_sha256_fingerprints', sql`text[]`)
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('app_associations_pkey', ['app_id', 'environment'])
    .addCheckConstraint(
      'app_associations_ios_complete',
      sql`(ios_team_id IS NULL) = (ios_bundle_id IS NULL)`,
    )
    .addCheckConstraint(
      'app_associations_android_complete',
      sql`(android_package_name IS NULL) = (android_sha256_fingerprints IS NULL)
        AND (android_sha256_fingerprints IS NULL OR cardinality(android_sha256_fingerprints) > 0)`,
    )
    .execute();

  // Ledger of click batches already added to links.click_count. The redirect service moves its
  // pending clicks from Redis into a uniquely named batch and applies it in one statement that
  // also inserts the batch id here, so a batch retried after a crash, or recovered by another
  // replica, is applied at most once. Rows are pruned after a day.
  await db.schema
    .createTable('link_click_batches')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('applied_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('link_click_batches_applied_at_idx')
    .on('link_click_batches')
    .column('applied_at')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('link_click_batches').execute();
  await db.schema.dropTable('app_associations').execute();
}
