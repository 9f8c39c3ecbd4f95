import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * Installs reported by apps (app-interface.md, POST /sdk/installs) and the click each matched.
 * New tables only: code of the previous release never reads them.
 *
 * Nothing about the device is stored: no address, no user agent, only the platform the app
 * reported. An installation erases its own rows (DELETE /sdk/installs/{id}, with the secret
 * whose SHA-256 is `secret_hash`); the worker deletes them after INSTALL_RETENTION_DAYS.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('installs')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('app_id', 'text', (col) => col.notNull().references('apps.id'))
    .addColumn('environment', 'text', (col) =>
      col.notNull().check(sql`environment IN ('live', 'test')`),
    )
    .addColumn('platform', 'text', (col) =>
      col.notNull().check(sql`platform IN ('ios', 'android')`),
    )
    // SHA-256 of the install secret; the secret is shown once, in the 201, and never stored.
    .addColumn('secret_hash', 'bytea', (col) => col.notNull())
    // How the install was matched to a link, and that link; both null for no match.
    .addColumn('match_method', 'text', (col) =>
      col.check(sql`match_method IN ('play_referrer', 'clipboard', 'opened_url')`),
    )
    .addColumn('link_id', 'text', (col) => col.references('links.id'))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addCheckConstraint(
      'installs_match_names_link',
      sql`(match_method IS NULL) = (link_id IS NULL)`,
    )
    .execute();
  // The worker's retention deletes the oldest first.
  await db.schema
    .createIndex('installs_created_at_idx')
    .on('installs')
    .column('created_at')
    .execute();

  // The click token an install used up: the one-time claim (a token hash is unique here, so two
  // reports with one token cannot both match) and the click's link and time. Erased with its
  // install (the cascade covers retention; erasure deletes and counts both rows).
  await db.schema
    .createTable('install_clicks')
    .addColumn('install_id', 'text', (col) =>
      col.primaryKey().references('installs.id').onDelete('cascade'),
    )
    // SHA-256 of the token, base64url: the name of its Redis key (see @linkservice/link-cache).
    .addColumn('token_hash', 'text', (col) => col.notNull().unique())
    .addColumn('link_id', 'text', (col) => col.notNull().references('links.id'))
    .addColumn('clicked_at', 'timestamptz', (col) => col.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('install_clicks').execute();
  await db.schema.dropTable('installs').execute();
}
