import type { Expression, Kysely, RawBuilder, SqlBool } from 'kysely';
import { sql } from 'kysely';
import type {
  Database,
  Environment,
  WebhookDeliveryStatus,
  WebhookDisabledReason,
} from '@linkservice/db';
import { constantStatement, executeStatement } from '@linkservice/db';
import type { DeliveriesQuery, WebhookChanges } from './webhook-params';
import { ATTEMPT_LOG_LENGTH } from './webhook-params';

/** Every statement here is scoped by the caller's app and environment. */
export interface WebhookScope {
  appId: string;
  environment: Environment;
}

/** An endpoint as the API shows it: never its secrets. */
export interface WebhookRow {
  id: string;
  url: string;
  description: string | null;
  event_types: string[];
  environment: Environment;
  failing_since: Date | null;
  disabled_at: Date | null;
  disabled_reason: WebhookDisabledReason | null;
  /** Null once passed: the rotated-out secret no longer signs. */
  previous_secret_expires_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptEntry {
  attempt: number;
  /** `YYYY-MM-DDThh:mm:ss.sssZ`, formatted by the statement (it is read from JSON). */
  at: string;
  durationMs: number;
  outcome: string;
  responseStatus: number | null;
  responseExcerpt: string | null;
}

export interface DeliveryRow {
  id: string;
  event_id: string;
  event_type: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  created_at: Date;
  next_attempt_at: Date;
  finished_at: Date | null;
  /** Newest first, at most ATTEMPT_LOG_LENGTH. */
  attempt_log: AttemptEntry[];
}

/** What a new endpoint is stored with; the secret sealed already. */
export interface NewWebhook {
  id: string;
  url: string;
  description: string | null;
  eventTypes: string[];
  sealedSecret: string;
}

/** Why a retry changed nothing. */
export type RetryRefusal = 'no_webhook' | 'no_delivery' | 'disabled';

/** The resource's columns of `table` (an alias of webhook_endpoints); never the secrets. */
function resourceColumns(table: string): string {
  return `${table}.id, ${table}.url, ${table}.description, ${table}.event_types,
    ${table}.environment, ${table}.failing_since, ${table}.disabled_at, ${table}.disabled_reason,
    CASE WHEN ${table}.previous_secret_expires_at > now()
         THEN ${table}.previous_secret_expires_at END AS previous_secret_expires_at,
    ${table}.created_at, ${table}.updated_at`;
}

const SCOPED = 'app_id = $2 AND environment = $3';

const FIND_BY_ID = constantStatement<WebhookRow>(
  `SELECT ${resourceColumns('webhook_endpoints')} FROM webhook_endpoints
   WHERE id = $1 AND ${SCOPED}`,
);

/** Oldest first; the scope index walks it in this order. */
const LIST = constantStatement<WebhookRow>(
  `SELECT ${resourceColumns('webhook_endpoints')} FROM webhook_endpoints
   WHERE app_id = $1 AND environment = $2
   ORDER BY created_at, id`,
);

/**
 * Inserts unless the app and environment already have `$8` endpoints. Only under the scope's
 * lock (see insertWithinLimit): the count alone would let two concurrent inserts both see 19.
 */
const INSERT_WITHIN_LIMIT = constantStatement<WebhookRow>(
  `INSERT INTO webhook_endpoints (id, app_id, environment, url, description, event_types, secret)
   SELECT $1, $2, $3, $4, $5, $6::text[], $7
   WHERE (SELECT count(*) FROM webhook_endpoints WHERE ${SCOPED}) < $8
   RETURNING ${resourceColumns('webhook_endpoints')}`,
);

const DELETE = constantStatement<{ id: string }>(
  `DELETE FROM webhook_endpoints WHERE id = $1 AND ${SCOPED} RETURNING id`,
);

/**
 * The current secret becomes the previous one (replacing a previous one still valid) and
 * signs beside the new one for `$4` hours. On the right of SET, `secret` is still the old one.
 */
const ROTATE_SECRET = constantStatement<WebhookRow>(
  `UPDATE webhook_endpoints
      SET previous_secret = secret,
          previous_secret_expires_at = now() + make_interval(hours => $4::int),
          secret = $5,
          updated_at = now()
    WHERE id = $1 AND ${SCOPED}
   RETURNING ${resourceColumns('webhook_endpoints')}`,
);

/**
 * A delivery as the API lists it: its event's type, and its last attempts as JSON (timestamps
 * formatted here: JSON would carry them in Postgres' own format).
 */
const DELIVERY_COLUMNS = `d.id, d.event_id, e.type AS event_type, d.status, d.attempts,
  d.created_at, d.next_attempt_at, d.finished_at,
  coalesce((
    SELECT json_agg(json_build_object(
             'attempt', a.attempt,
             'at', to_char(a.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'durationMs', a.duration_ms,
             'outcome', a.outcome,
             'responseStatus', a.response_status,
             'responseExcerpt', a.response_excerpt) ORDER BY a.attempt DESC)
      FROM (SELECT * FROM webhook_attempts
             WHERE delivery_id = d.id ORDER BY attempt DESC LIMIT ${ATTEMPT_LOG_LENGTH}) a
  ), '[]'::json) AS attempt_log`;

/**
 * One page of an endpoint's deliveries, newest first (the endpoint index's order): `$2` a
 * status or null for all, `$3` the last delivery of the previous page or null, `$4` the limit.
 * A cursor that names no delivery of the endpoint gives an empty page.
 */
const DELIVERIES_PAGE = constantStatement<DeliveryRow>(
  `SELECT ${DELIVERY_COLUMNS}
     FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
    WHERE d.endpoint_id = $1
      AND ($2::text IS NULL OR d.status = $2)
      AND ($3::text IS NULL OR (d.created_at, d.id) <
           (SELECT created_at, id FROM webhook_deliveries WHERE id = $3 AND endpoint_id = $1))
    ORDER BY d.created_at DESC, d.id DESC
    LIMIT $4`,
);

const DELIVERY_BY_ID = constantStatement<DeliveryRow>(
  `SELECT ${DELIVERY_COLUMNS}
     FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
    WHERE d.id = $1 AND d.endpoint_id = $2`,
);

/**
 * One more attempt, now: back to pending and due, for the relay to hand over again. Only a
 * delivery of the endpoint, and only while the endpoint is enabled.
 */
const RETRY_DELIVERY = constantStatement<{ id: string }>(
  `UPDATE webhook_deliveries d
      SET status = 'pending', finished_at = NULL, next_attempt_at = now(), enqueued_at = NULL
     FROM webhook_endpoints endpoint
    WHERE d.id = $4 AND d.endpoint_id = $1
      AND endpoint.id = $1 AND endpoint.app_id = $2 AND endpoint.environment = $3
      AND endpoint.disabled_at IS NULL
   RETURNING d.id`,
);

/** Why RETRY_DELIVERY matched nothing. */
const RETRY_STATE = constantStatement<{ disabled: boolean; delivery_found: boolean }>(
  `SELECT endpoint.disabled_at IS NOT NULL AS disabled,
          EXISTS (SELECT 1 FROM webhook_deliveries WHERE id = $4 AND endpoint_id = $1)
            AS delivery_found
     FROM webhook_endpoints endpoint
    WHERE endpoint.id = $1 AND endpoint.app_id = $2 AND endpoint.environment = $3`,
);

/** The only Kysely user of webhook endpoints and their deliveries on the gateway. */
export class WebhooksRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async findById(scope: WebhookScope, id: string): Promise<WebhookRow | undefined> {
    const rows = await executeStatement(this.db, FIND_BY_ID, [id, scope.appId, scope.environment]);
    return rows.at(0);
  }

  list(scope: WebhookScope): Promise<WebhookRow[]> {
    return executeStatement(this.db, LIST, [scope.appId, scope.environment]);
  }

  /**
   * Inserts the endpoint unless the scope has `limit` already; undefined then. The scope's
   * transaction-level advisory lock serialises the inserts of one app and environment, and the
   * count runs in the statement after it took the lock: under READ COMMITTED that statement's
   * snapshot sees every insert committed before, which a lock taken inside one statement would
   * not give (its snapshot predates the wait). A hash collision only makes two scopes wait for
   * each other.
   */
  async insertWithinLimit(
    scope: WebhookScope,
    webhook: NewWebhook,
    limit: number,
  ): Promise<WebhookRow | undefined> {
    return this.db.transaction().execute(async (tx) => {
      const lockName = `webhook_endpoints ${scope.appId} ${scope.environment}`;
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(${lockName}, 0))`.execute(tx);
      const rows = await executeStatement(tx, INSERT_WITHIN_LIMIT, [
        webhook.id,
        scope.appId,
        scope.environment,
        webhook.url,
        webhook.description,
        webhook.eventTypes,
        webhook.sealedSecret,
        limit,
      ]);
      return rows.at(0);
    });
  }

  /**
   * Applies the changes in one statement; undefined when the scope has no such endpoint.
   * `updated_at` moves only when a value really differs (on the right of SET, columns hold their
   * old values). Enabling a disabled endpoint clears its disabled and failing state and makes
   * its pending deliveries due now and free to be enqueued again, in the same statement, so a
   * delivery never waits behind an endpoint that is enabled. Disabling one already disabled
   * keeps its reason and time. `old` locks the row, so that when the statement waited for a
   * concurrent change it reads the endpoint as that change left it.
   */
  async update(
    scope: WebhookScope,
    id: string,
    changes: WebhookChanges,
  ): Promise<WebhookRow | undefined> {
    const set: RawBuilder<unknown>[] = [];
    const differences: Expression<SqlBool>[] = [];
    const assign = (column: string, value: RawBuilder<unknown>) => {
      set.push(sql`${sql.ref(column)} = ${value}`);
    };
    if (changes.url !== undefined) {
      assign('url', sql`${changes.url}`);
      differences.push(sql<SqlBool>`endpoint.url IS DISTINCT FROM ${changes.url}`);
    }
    if (changes.description !== undefined) {
      assign('description', sql`${changes.description}::text`);
      differences.push(
        sql<SqlBool>`endpoint.description IS DISTINCT FROM ${changes.description}::text`,
      );
    }
    if (changes.eventTypes !== undefined) {
      assign('event_types', sql`${changes.eventTypes}::text[]`);
      differences.push(
        sql<SqlBool>`endpoint.event_types IS DISTINCT FROM ${changes.eventTypes}::text[]`,
      );
    }
    if (changes.enabled === true) {
      assign('disabled_at', sql`NULL`);
      assign('disabled_reason', sql`NULL`);
      assign(
        'failing_since',
        sql`CASE WHEN endpoint.disabled_at IS NULL THEN endpoint.failing_since END`,
      );
      differences.push(sql<SqlBool>`endpoint.disabled_at IS NOT NULL`);
    } else if (changes.enabled === false) {
      assign('disabled_at', sql`coalesce(endpoint.disabled_at, now())`);
      assign('disabled_reason', sql`coalesce(endpoint.disabled_reason, 'requested')`);
      differences.push(sql<SqlBool>`endpoint.disabled_at IS NULL`);
    }
    if (differences.length === 0) throw new Error('update needs at least one change');
    // Only when enabling: the endpoint's pending deliveries, if it was disabled until now.
    const resumed =
      changes.enabled === true
        ? sql`, resumed AS (
            UPDATE webhook_deliveries
               SET next_attempt_at = now(), enqueued_at = NULL
             WHERE endpoint_id = (SELECT id FROM old WHERE disabled_at IS NOT NULL)
               AND status = 'pending'
          )`
        : sql``;

    const { rows } = await sql<WebhookRow>`
      WITH old AS (
        SELECT id, disabled_at FROM webhook_endpoints
         WHERE id = ${id} AND app_id = ${scope.appId} AND environment = ${scope.environment}
         FOR UPDATE
      ), changed AS (
        UPDATE webhook_endpoints endpoint
           SET ${sql.join(set)},
               updated_at = CASE WHEN ${sql.join(differences, sql` OR `)}
                                 THEN now() ELSE endpoint.updated_at END
          FROM old
         WHERE endpoint.id = old.id
        RETURNING ${sql.raw(resourceColumns('endpoint'))}
      )${resumed}
      SELECT * FROM changed`.execute(this.db);
    return rows.at(0);
  }

  /** True when the scope had the endpoint; its deliveries and their attempts go with it. */
  async delete(scope: WebhookScope, id: string): Promise<boolean> {
    const rows = await executeStatement(this.db, DELETE, [id, scope.appId, scope.environment]);
    return rows.length > 0;
  }

  async rotateSecret(
    scope: WebhookScope,
    id: string,
    sealedSecret: string,
    previousSecretHours: number,
  ): Promise<WebhookRow | undefined> {
    const rows = await executeStatement(this.db, ROTATE_SECRET, [
      id,
      scope.appId,
      scope.environment,
      previousSecretHours,
      sealedSecret,
    ]);
    return rows.at(0);
  }

  /** A page of an endpoint's deliveries; the caller has checked the endpoint is the scope's. */
  deliveries(endpointId: string, query: DeliveriesQuery): Promise<DeliveryRow[]> {
    return executeStatement(this.db, DELIVERIES_PAGE, [
      endpointId,
      query.status,
      query.cursor,
      query.limit,
    ]);
  }

  async deliveryById(endpointId: string, deliveryId: string): Promise<DeliveryRow | undefined> {
    const rows = await executeStatement(this.db, DELIVERY_BY_ID, [deliveryId, endpointId]);
    return rows.at(0);
  }

  /**
   * Gives a delivery of the scope's endpoint one more attempt now, in one conditional UPDATE;
   * when it matched nothing, one more read says why.
   */
  async retryDelivery(
    scope: WebhookScope,
    endpointId: string,
    deliveryId: string,
  ): Promise<{ ok: true } | { ok: false; reason: RetryRefusal }> {
    const parameters = [endpointId, scope.appId, scope.environment, deliveryId];
    // Twice at most: an endpoint enabled between the UPDATE and the read is retried again.
    for (let round = 0; round < 2; round++) {
      const retried = await executeStatement(this.db, RETRY_DELIVERY, parameters);
      if (retried.length > 0) return { ok: true };
      const state = (await executeStatement(this.db, RETRY_STATE, parameters)).at(0);
      if (!state) return { ok: false, reason: 'no_webhook' };
      if (!state.delivery_found) return { ok: false, reason: 'no_delivery' };
      if (state.disabled) return { ok: false, reason: 'disabled' };
    }
    // Enabled, with the delivery, yet not updated twice: a broken invariant, not a user error.
    throw new Error(`retry of delivery ${deliveryId} matched no row`);
  }
}
