import type { Database, Environment, WebhookDisabledReason } from '@linkservice/db';
import { constantStatement, executeStatement } from '@linkservice/db';
import { DISABLE_AFTER_FAILING_MS } from '@linkservice/webhooks';
import type { Kysely } from 'kysely';
import type { JobDelivery } from './delivery-job.contract';
import type { AttemptOutcome, NextDeliveryState } from './delivery-outcome';

/** A delivery as its attempt needs it: the event, the endpoint and its (sealed) secrets. */
export interface DeliveryToAttempt {
  deliveryId: string;
  attempt: number;
  event: {
    id: string;
    type: string;
    environment: Environment;
    occurredAt: Date;
    snapshot: Record<string, unknown>;
    traceparent: string | null;
    subdomainKey: string;
  };
  endpoint: {
    id: string;
    url: string;
    /** Sealed (SecretBox). */
    secret: string;
    /** Sealed; only while it still signs (previous_secret_expires_at not passed). */
    previousSecret: string | null;
    /** Disabled since the job was queued: nothing is sent, the delivery waits. */
    disabled: boolean;
  };
}

interface LoadRow {
  delivery_id: string;
  attempt: number;
  event_id: string;
  type: string;
  environment: Environment;
  occurred_at: Date;
  snapshot: Record<string, unknown>;
  traceparent: string | null;
  subdomain_key: string;
  endpoint_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  disabled: boolean;
}

/**
 * A job's deliveries that are still where the job found them: pending, at the attempt the job
 * names (a duplicate job, or one recorded meanwhile, finds none), with their event, endpoint
 * and app. Read only, but for a delivery whose endpoint was disabled meanwhile: it is released
 * (`enqueued_at` NULL: sent once it is enabled again). The relay's stale bound counts from the
 * claim: a job waits in the queue far less than that (the relay stops claiming while the queue
 * holds 4 x WEBHOOK_CONCURRENCY jobs, each done within WEBHOOK_TIMEOUT_MS), so writing the
 * row again here would cost every delivery an UPDATE for nothing.
 * $1: delivery ids; $2: their attempts (from 1).
 */
const LOAD_FOR_ATTEMPT = constantStatement<LoadRow>(`
  WITH job AS (
    SELECT * FROM unnest($1::text[], $2::int[]) AS job (delivery_id, attempt)
  ),
  current AS (
    SELECT delivery.id, delivery.event_id, delivery.endpoint_id, job.attempt,
           endpoint.disabled_at IS NOT NULL AS disabled
      FROM job
      JOIN webhook_deliveries delivery ON delivery.id = job.delivery_id
      JOIN webhook_endpoints endpoint ON endpoint.id = delivery.endpoint_id
     WHERE delivery.attempts = job.attempt - 1
       AND delivery.status = 'pending'
  ),
  released AS (
    UPDATE webhook_deliveries delivery SET enqueued_at = NULL
      FROM current
     WHERE delivery.id = current.id AND current.disabled
  )
  SELECT current.id AS delivery_id, current.attempt,
         event.id AS event_id, event.type, event.environment, event.occurred_at, event.snapshot,
         event.traceparent,
         app.subdomain_key,
         endpoint.id AS endpoint_id, endpoint.url, endpoint.secret,
         CASE WHEN endpoint.previous_secret_expires_at > now() THEN endpoint.previous_secret END
           AS previous_secret,
         current.disabled
    FROM current
    JOIN webhook_events event ON event.id = current.event_id
    JOIN webhook_endpoints endpoint ON endpoint.id = current.endpoint_id
    JOIN apps app ON app.id = event.app_id`);

/** An attempt made, and where it leaves its delivery (nextDeliveryState). */
export interface AttemptRecord {
  deliveryId: string;
  attempt: number;
  startedAt: Date;
  durationMs: number;
  outcome: AttemptOutcome;
  responseStatus: number | null;
  responseExcerpt: string | null;
  next: NextDeliveryState;
}

/**
 * A job's attempts, recorded set-based in one statement:
 * - `recorded`: each delivery moves on (attempts + 1; delivered, due again after its delay, or
 *   failed) and is released (`enqueued_at` NULL), only if it still has the attempts the job
 *   found: a duplicate job (stalled and redelivered, claimed again) records nothing twice;
 * - its attempt row, for those recorded;
 * - each endpoint of a recorded attempt, while enabled: any success clears `failing_since`; else
 *   a failure starts it if unset; a 410 disables the endpoint (`gone`), and so does failing
 *   still after $10 ms since `failing_since` (`failing`).
 * Returns the deliveries recorded, the endpoints this statement disabled, and whether a
 * delivered one has a later delivery of its subject waiting (now first in line: worth a relay
 * pass at once; otherwise the relay's interval is soon enough, and passes stay few and full).
 */
const RECORD_ATTEMPTS = constantStatement<{
  kind: 'delivery' | 'endpoint' | 'successor';
  id: string;
  disabled_reason: WebhookDisabledReason | null;
}>(`
  WITH result AS (
    SELECT * FROM unnest($1::text[], $2::int[], $3::timestamptz[], $4::int[], $5::text[],
                         $6::int[], $7::text[], $8::text[], $9::int[])
      AS result (delivery_id, attempt, started_at, duration_ms, outcome,
                 response_status, response_excerpt, status, retry_delay_ms)
  ),
  recorded AS (
    UPDATE webhook_deliveries delivery
       SET attempts = result.attempt,
           status = result.status,
           finished_at = CASE WHEN result.status = 'pending' THEN NULL ELSE now() END,
           next_attempt_at = CASE WHEN result.status = 'pending'
             THEN now() + make_interval(secs => result.retry_delay_ms::double precision / 1000)
             ELSE delivery.next_attempt_at END,
           enqueued_at = NULL
      FROM result
     WHERE delivery.id = result.delivery_id
       AND delivery.attempts = result.attempt - 1
       AND delivery.status = 'pending'
    RETURNING delivery.id, delivery.endpoint_id, delivery.subject, delivery.seq, result.outcome
  ),
  attempt_rows AS (
    INSERT INTO webhook_attempts
      (delivery_id, attempt, started_at, duration_ms, outcome, response_status, response_excerpt)
    SELECT result.delivery_id, result.attempt, result.started_at, result.duration_ms,
           result.outcome, result.response_status, result.response_excerpt
      FROM result
      JOIN recorded ON recorded.id = result.delivery_id
    ON CONFLICT (delivery_id, attempt) DO NOTHING
  ),
  per_endpoint AS (
    SELECT endpoint_id,
           bool_or(outcome = 'succeeded') AS succeeded,
           bool_or(outcome = 'gone') AS gone
      FROM recorded
     GROUP BY endpoint_id
  ),
  verdict AS (
    SELECT endpoint.id, per_endpoint.succeeded,
           CASE WHEN per_endpoint.gone THEN 'gone'
                WHEN NOT per_endpoint.succeeded
                 AND endpoint.failing_since < now() - make_interval(secs => $10::double precision / 1000)
                THEN 'failing'
           END AS disabled_reason
      FROM per_endpoint
      JOIN webhook_endpoints endpoint ON endpoint.id = per_endpoint.endpoint_id
     WHERE endpoint.disabled_at IS NULL
  ),
  endpoints AS (
    UPDATE webhook_endpoints endpoint
       SET failing_since = CASE WHEN verdict.succeeded THEN NULL
                                ELSE coalesce(endpoint.failing_since, now()) END,
           disabled_at = CASE WHEN verdict.disabled_reason IS NOT NULL THEN now() END,
           disabled_reason = verdict.disabled_reason,
           updated_at = CASE WHEN verdict.disabled_reason IS NOT NULL THEN now()
                             ELSE endpoint.updated_at END
      FROM verdict
     WHERE endpoint.id = verdict.id
       AND endpoint.disabled_at IS NULL
    RETURNING endpoint.id, endpoint.disabled_reason
  )
  SELECT 'delivery' AS kind, id, NULL AS disabled_reason FROM recorded
  UNION ALL
  SELECT 'endpoint', id, disabled_reason FROM endpoints WHERE disabled_reason IS NOT NULL
  UNION ALL
  (SELECT 'successor', recorded.id, NULL FROM recorded
    WHERE recorded.outcome = 'succeeded'
      AND EXISTS (SELECT 1 FROM webhook_deliveries later
                   WHERE later.endpoint_id = recorded.endpoint_id
                     AND later.subject = recorded.subject
                     AND later.seq > recorded.seq
                     AND later.status = 'pending')
    LIMIT 1)`);

export interface RecordedAttempts {
  /** Deliveries whose attempt was recorded (a duplicate job's are not). */
  recorded: Set<string>;
  /** Endpoints disabled by these attempts, with why. */
  disabled: { endpointId: string; reason: WebhookDisabledReason }[];
  /** A delivered delivery has a later one of its endpoint and subject pending. */
  successorWaiting: boolean;
}

export class WebhookDeliveryRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** See LOAD_FOR_ATTEMPT. */
  async loadForAttempt(deliveries: readonly JobDelivery[]): Promise<DeliveryToAttempt[]> {
    const rows = await executeStatement(this.db, LOAD_FOR_ATTEMPT, [
      deliveries.map((delivery) => delivery.deliveryId),
      deliveries.map((delivery) => delivery.attempt),
    ]);
    return rows.map((row) => ({
      deliveryId: row.delivery_id,
      attempt: row.attempt,
      event: {
        id: row.event_id,
        type: row.type,
        environment: row.environment,
        occurredAt: row.occurred_at,
        snapshot: row.snapshot,
        traceparent: row.traceparent,
        subdomainKey: row.subdomain_key,
      },
      endpoint: {
        id: row.endpoint_id,
        url: row.url,
        secret: row.secret,
        previousSecret: row.previous_secret,
        disabled: row.disabled,
      },
    }));
  }

  /** See RECORD_ATTEMPTS. */
  async record(
    attempts: readonly AttemptRecord[],
    disableAfterFailingMs: number = DISABLE_AFTER_FAILING_MS,
  ): Promise<RecordedAttempts> {
    if (attempts.length === 0)
      return { recorded: new Set(), disabled: [], successorWaiting: false };
    const column = <T>(pick: (attempt: AttemptRecord) => T): T[] => attempts.map(pick);
    const rows = await executeStatement(this.db, RECORD_ATTEMPTS, [
      column((a) => a.deliveryId),
      column((a) => a.attempt),
      column((a) => a.startedAt),
      column((a) => a.durationMs),
      column((a) => a.outcome),
      column((a) => a.responseStatus),
      column((a) => a.responseExcerpt),
      column((a) => a.next.status),
      column((a) => (a.next.status === 'pending' ? a.next.retryDelayMs : null)),
      disableAfterFailingMs,
    ]);
    const recorded = new Set<string>();
    const disabled: RecordedAttempts['disabled'] = [];
    let successorWaiting = false;
    for (const row of rows) {
      if (row.kind === 'delivery') recorded.add(row.id);
      else if (row.kind === 'successor') successorWaiting = true;
      else if (row.disabled_reason)
        disabled.push({ endpointId: row.id, reason: row.disabled_reason });
    }
    return { recorded, disabled, successorWaiting };
  }
}
