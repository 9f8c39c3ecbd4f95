import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * Webhooks (docs/webhooks.md): endpoints per app and environment, and the outbox.
 *
 * - webhook_endpoints: where an app's events go. `secret` and `previous_secret` hold the signing
 *   secrets encrypted (AES-256-GCM under WEBHOOK_ENCRYPTION_KEY, see @linkservice/webhooks'
 *   secret-box); the previous one signs beside the new one until `previous_secret_expires_at`.
 *   `failing_since`: the first failed attempt since the last success; `disabled_at` with a
 *   reason once the endpoint was turned off (by its owner, by failing 5 days, or by a 410).
 * - webhook_events: the outbox. A statement that changes a link or an install inserts its event
 *   in the same statement (so in the same transaction) when an enabled endpoint of the app and
 *   environment subscribes to the type: a committed change always has its event, a rolled-back
 *   one never. `snapshot` is what the change left (rendered into the payload on delivery),
 *   `subject` what orders events (a link's or an install's id), `seq` the order among them.
 * - webhook_deliveries: one per event and subscribed endpoint, made in the same statement;
 *   `pending` until an attempt succeeds (`delivered`) or the schedule runs out (`failed`).
 *   The worker's relay picks due deliveries that are first in line for their endpoint and
 *   subject and hands them to BullMQ (`enqueued_at`). Room is left in each page (fillfactor)
 *   so that claim, an update of an unindexed column, stays a HOT update.
 * - webhook_attempts: each try of a delivery: when, how long, what came back (status code and
 *   a short excerpt of the body, never more).
 *
 * New tables only: code of the previous release never touches them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    CREATE TABLE webhook_endpoints (
      id text PRIMARY KEY,
      app_id text NOT NULL REFERENCES apps (id),
      environment text NOT NULL CHECK (environment IN ('live', 'test')),
      url text NOT NULL,
      description text,
      event_types text[] NOT NULL,
      secret text NOT NULL,
      previous_secret text,
      previous_secret_expires_at timestamptz,
      failing_since timestamptz,
      disabled_at timestamptz,
      disabled_reason text CHECK (disabled_reason IN ('requested', 'failing', 'gone')),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((disabled_at IS NULL) = (disabled_reason IS NULL)),
      CHECK ((previous_secret IS NULL) = (previous_secret_expires_at IS NULL))
    )`.execute(db);
  await sql`CREATE INDEX webhook_endpoints_scope_idx
    ON webhook_endpoints (app_id, environment, created_at, id)`.execute(db);

  await sql`
    CREATE TABLE webhook_events (
      id text PRIMARY KEY,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      app_id text NOT NULL,
      environment text NOT NULL,
      type text NOT NULL,
      subject text NOT NULL,
      snapshot jsonb NOT NULL,
      traceparent text,
      occurred_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  // Retention: events whose deliveries are all gone; install events, swept once delivered.
  await sql`CREATE INDEX webhook_events_occurred_idx ON webhook_events (occurred_at)`.execute(db);
  await sql`CREATE INDEX webhook_events_install_idx ON webhook_events (occurred_at)
    WHERE type LIKE 'install.%'`.execute(db);

  await sql`
    CREATE TABLE webhook_deliveries (
      id text PRIMARY KEY,
      event_id text NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
      endpoint_id text NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
      subject text NOT NULL,
      seq bigint NOT NULL,
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL DEFAULT now(),
      enqueued_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      finished_at timestamptz,
      CHECK ((status = 'pending') = (finished_at IS NULL))
    ) WITH (fillfactor = 70)`.execute(db);
  // The relay: due deliveries, and whether one is first in line for its endpoint and subject.
  await sql`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending'`.execute(db);
  await sql`CREATE INDEX webhook_deliveries_line_idx ON webhook_deliveries (endpoint_id, subject, seq)
    WHERE status = 'pending'`.execute(db);
  // GET /webhooks/{id}/deliveries, newest first; retention of finished ones; the event's cascade.
  await sql`CREATE INDEX webhook_deliveries_endpoint_idx
    ON webhook_deliveries (endpoint_id, created_at DESC, id DESC)`.execute(db);
  await sql`CREATE INDEX webhook_deliveries_finished_idx ON webhook_deliveries (finished_at)
    WHERE status <> 'pending'`.execute(db);
  await sql`CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id)`.execute(db);

  await sql`
    CREATE TABLE webhook_attempts (
      delivery_id text NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
      attempt integer NOT NULL,
      started_at timestamptz NOT NULL,
      duration_ms integer NOT NULL,
      outcome text NOT NULL,
      response_status integer,
      response_excerpt text,
      PRIMARY KEY (delivery_id, attempt)
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE webhook_attempts, webhook_deliveries, webhook_events, webhook_endpoints`.execute(
    db,
  );
}
