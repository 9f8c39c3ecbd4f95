import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * The app interface (app-interface.md): publishable keys and the opt-in iOS deferred page (click
 * tokens live in Redis: see @linkservice/link-cache). Adding columns with constant defaults: no
 * rewrite of existing rows, and code of the previous release keeps
 * working against it (its keys are all secret keys; it never reads the new columns).
 */
export async function up(db: Kysely<any>): Promise<void> {
  // A key's type: `secret` (the server API) or `publishable` (shipped inside apps; only the
  // /api/v1/sdk endpoints). The text of a key names its type too (ls_sk_ / ls_pk_), and auth
  // requires both to agree, as it does for the environment.
  await db.schema
    .alterTable('api_keys')
    .addColumn('type', 'text', (col) =>
      col
        .notNull()
        .defaultTo('secret')
        .check(sql`type IN ('secret', 'publishable')`),
    )
    .execute();

  // Serve the "Get the app" page instead of a 302 to the iOS fallback (linkctl app set-ios
  // --deferred-page on|off). Part of the environment's iOS settings: only with them.
  await db.schema
    .alterTable('app_associations')
    .addColumn('ios_deferred_page', 'boolean', (col) => col.notNull().defaultTo(false))
    .execute();
  await db.schema
    .alterTable('app_associations')
    .addCheckConstraint(
      'app_associations_ios_deferred_page_needs_ios',
      sql`NOT ios_deferred_page OR ios_team_id IS NOT NULL`,
    )
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('app_associations')
    .dropConstraint('app_associations_ios_deferred_page_needs_ios')
    .execute();
  await db.schema.alterTable('app_associations').dropColumn('ios_deferred_page').execute();
  await db.schema.alterTable('api_keys').dropColumn('type').execute();
}
