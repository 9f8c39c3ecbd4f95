import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * Idempotency-Key records of POST /links and POST /links/batch (docs/decisions.md). A new table
 * only: code of the previous release never reads it, and requests without the header never
 * touch it.
 *
 * One row per (app, environment, key), kept 24 hours from the first request. While its request
 * runs the row names the owning attempt's creation request (creation_requests.id) and when that
 * attempt counts as gone; once answered it holds the answer to replay. No API key and no request
 * body is stored: the request is remembered by its SHA-256 only.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('app_id', 'text', (col) => col.notNull().references('apps.id'))
    .addColumn('environment', 'text', (col) =>
      col.notNull().check(sql`environment IN ('live', 'test')`),
    )
    .addColumn('key', 'text', (col) => col.notNull())
    // SHA-256 (hex) of the endpoint and the canonical JSON body: "the same request".
    .addColumn('request_hash', 'text', (col) => col.notNull())
    // The owning attempt's creation request: its exactly-once row says whether it created.
    .addColumn('creation_request_id', 'text', (col) => col.notNull())
    // Past this (database clock) an attempt without an answer is gone (its gateway died).
    .addColumn('owner_deadline', 'timestamptz', (col) => col.notNull())
    // The answer, null while the request runs; the body as the exact JSON text that was sent.
    .addColumn('answer_status', 'integer')
    .addColumn('answer_headers', 'jsonb')
    .addColumn('answer_body', 'text')
    .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['app_id', 'environment', 'key'])
    .addCheckConstraint(
      'idempotency_keys_answer_whole',
      sql`(answer_status IS NULL) = (answer_body IS NULL) AND (answer_status IS NULL) = (answer_headers IS NULL)`,
    )
    .execute();
  // The worker's retention deletes the oldest first.
  await db.schema
    .createIndex('idempotency_keys_created_at_idx')
    .on('idempotency_keys')
    .column('created_at')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}
