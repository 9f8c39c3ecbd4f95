import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

export async function up(db: Kysely<any>): Promise<void> {
  await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);

  await db.schema
    .createTable('apps')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('name', 'text', (col) => col.notNull())
    .addColumn('subdomain_key', 'text', (col) => col.notNull().unique())
    .addColumn('link_allowance', 'integer', (col) => col.check(sql`link_allowance >= 0`))
    // Links of the app in both environments, archived ones included: the plan allowance counts
    // exactly these. Kept by the worker in the transaction that inserts the links.
    .addColumn('link_count', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('app_id', 'text', (col) => col.notNull().references('apps.id'))
    .addColumn('environment', 'text', (col) =>
      col.notNull().check(sql`environment IN ('live', 'test')`),
    )
    // SHA-256 of the whole secret; the secret itself is never stored.
    .addColumn('key_hash', 'bytea', (col) => col.notNull().unique())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('api_keys_app_id_idx').on('api_keys').column('app_id').execute();

  await db.schema
    .createTable('links')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('app_id', 'text', (col) => col.notNull().references('apps.id'))
    .addColumn('environment', 'text', (col) =>
      col.notNull().check(sql`environment IN ('live', 'test')`),
    )
    // "C" collation: aliases are case-sensitive and sort by code point.
    .addColumn('alias', sql`text COLLATE "C"`, (col) => col.notNull())
    .addColumn('web_fallback_url', 'text', (col) => col.notNull())
    .addColumn('ios_fallback_url', 'text')
    .addColumn('deep_link_data', 'jsonb')
    .addColumn('title', 'text')
    .addColumn('campaign', 'text')
    .addColumn('channel', 'text')
    .addColumn('feature', 'text')
    .addColumn('tags', sql`text[]`, (col) => col.notNull().defaultTo(sql`'{}'`))
    .addColumn('expires_at', 'timestamptz')
    .addColumn('archived_at', 'timestamptz')
    .addColumn('click_count', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    // Lower-cased searchable fields joined by a unit separator, so one trigram index serves the
    // case-insensitive substring search and a match can never span two fields.
    .addColumn('search_text', 'text', (col) =>
      col
        .notNull()
        .generatedAlwaysAs(
          sql`lower(
            (alias COLLATE "default") || chr(31) || coalesce(title, '') || chr(31) ||
            coalesce(campaign, '') || chr(31) || coalesce(channel, '') || chr(31) ||
            coalesce(feature, ''))`,
        )
        .stored(),
    )
    .addUniqueConstraint('links_app_env_alias_key', ['app_id', 'environment', 'alias'])
    .execute();

  // One index per list order; ties break by id so pages never overlap.
  await sql`CREATE INDEX links_newest_idx ON links (app_id, environment, created_at DESC, id DESC)`.execute(
    db,
  );
  await sql`CREATE INDEX links_clicks_idx ON links (app_id, environment, click_count DESC, id ASC)`.execute(
    db,
  );
  await sql`CREATE INDEX links_tags_idx ON links USING gin (tags)`.execute(db);
  await sql`CREATE INDEX links_search_idx ON links USING gin (search_text gin_trgm_ops)`.execute(
    db,
  );

  // Creation bookkeeping: one row per creation job, written in the same transaction as the links
  // it creates. A job id found here with status 'done' was already applied (a redelivered job
  // returns the stored results instead of creating again); 'abandoned' means the gateway stopped
  // waiting first and the job must create nothing.
  await db.schema
    .createTable('creation_requests')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('app_id', 'text', (col) => col.notNull().references('apps.id'))
    .addColumn('status', 'text', (col) => col.notNull().check(sql`status IN ('done', 'abandoned')`))
    .addColumn('results', 'jsonb')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('creation_requests_created_at_idx')
    .on('creation_requests')
    .column('created_at')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('creation_requests').execute();
  await db.schema.dropTable('links').execute();
  await db.schema.dropTable('api_keys').execute();
  await db.schema.dropTable('apps').execute();
}
