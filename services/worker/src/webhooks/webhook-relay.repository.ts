import type { Database } from '@linkservice/db';
import { constantStatement, executeStatement } from '@linkservice/db';
import type { Kysely } from 'kysely';
import type { ClaimedDelivery } from './relay-batches';

/**
 * `delivery` is first in line: no earlier pending delivery of its endpoint and subject (a
 * subject's events reach an endpoint in order). Uses webhook_deliveries_line_idx.
 */
const FIRST_IN_LINE = `NOT EXISTS (
  SELECT 1 FROM webhook_deliveries earlier
   WHERE earlier.endpoint_id = delivery.endpoint_id
     AND earlier.subject = delivery.subject
     AND earlier.seq < delivery.seq
     AND earlier.status = 'pending')`;

/**
 * The relay's claim, one statement (no session state: it runs as one implicit transaction,
 * through PgBouncer's transaction mode too). A delivery is claimed when it is pending and due,
 * its endpoint is enabled, it is first in line (no earlier pending delivery of the same
 * endpoint and subject: a subject's events reach an endpoint in order), and no job holds it:
 * never enqueued, or enqueued longer ago than the stale bound (its job was lost from Redis, or
 * its worker died; the processor refreshes `enqueued_at` when it starts, so a running job is
 * not taken twice). SKIP LOCKED: two relays never claim the same row, and neither waits.
 * $1: how many at most; $2: the stale bound in ms.
 */
const CLAIM_DUE = constantStatement<{ id: string; attempts: number; endpoint_id: string }>(`
  WITH due AS (
    SELECT delivery.id
      FROM webhook_deliveries delivery
      JOIN webhook_endpoints endpoint ON endpoint.id = delivery.endpoint_id
     WHERE delivery.status = 'pending'
       AND delivery.next_attempt_at <= now()
       AND (delivery.enqueued_at IS NULL
            OR delivery.enqueued_at < now() - make_interval(secs => $2::double precision / 1000))
       AND endpoint.disabled_at IS NULL
       AND ${FIRST_IN_LINE}
     ORDER BY delivery.next_attempt_at
     LIMIT $1
       FOR UPDATE OF delivery SKIP LOCKED
  )
  UPDATE webhook_deliveries delivery
     SET enqueued_at = now()
    FROM due
   WHERE delivery.id = due.id
  RETURNING delivery.id, delivery.attempts, delivery.endpoint_id`);

/**
 * How long the oldest due pending delivery of an enabled endpoint that is first in line has
 * been due, in seconds; no row when none is. Walks the due index oldest first. Deliveries
 * waiting behind an earlier one of their subject are left out: they wait for that one's retry
 * (a customer's failing endpoint), not for the workers, which is what the backlog alert is for.
 */
const OLDEST_DUE_AGE = constantStatement<{ age_seconds: number }>(`
  SELECT extract(epoch FROM now() - delivery.next_attempt_at)::double precision AS age_seconds
    FROM webhook_deliveries delivery
    JOIN webhook_endpoints endpoint ON endpoint.id = delivery.endpoint_id
   WHERE delivery.status = 'pending'
     AND delivery.next_attempt_at <= now()
     AND endpoint.disabled_at IS NULL
     AND ${FIRST_IN_LINE}
   ORDER BY delivery.next_attempt_at
   LIMIT 1`);

export class WebhookRelayRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** Claims up to `limit` due deliveries first in line (see CLAIM_DUE), oldest due first. */
  async claimDue(limit: number, staleAfterMs: number): Promise<ClaimedDelivery[]> {
    const rows = await executeStatement(this.db, CLAIM_DUE, [limit, staleAfterMs]);
    return rows.map((row) => ({ id: row.id, attempts: row.attempts, endpointId: row.endpoint_id }));
  }

  /** Seconds the oldest due delivery of an enabled endpoint has waited; 0 when none waits. */
  async oldestDueAgeSeconds(): Promise<number> {
    const rows = await executeStatement(this.db, OLDEST_DUE_AGE, []);
    return rows.at(0)?.age_seconds ?? 0;
  }
}
