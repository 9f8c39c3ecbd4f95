import type { WebhookEventType } from './event-types';

/** Where the outbox CTEs take a change's events from: SQL expressions over `from`'s rows. */
export interface OutboxSource {
  /** A CTE or table holding the changed rows (one event each), e.g. `inserted`. */
  from: string;
  type: WebhookEventType;
  appId: string;
  environment: string;
  /** What orders the events: the link's id for link events, the install's for install events. */
  subject: string;
  /** jsonb: what the change left, rendered into the payload when delivered (see event-payload). */
  snapshot: string;
  /** text: the change's W3C traceparent, '' or NULL for none. */
  traceparent: string;
  /** An extra condition on `from`'s rows; every row by default. */
  where?: string;
}

/**
 * Two CTEs, `webhook_events_new` and `webhook_deliveries_new`, that write a change's events and
 * their deliveries in the statement that makes the change (data-modifying CTEs run whether or
 * not the rest of the statement reads them): so a committed change always has its events and
 * a rolled-back one never does. An event is written only when an enabled endpoint of its app
 * and environment subscribes to its type, with one delivery per such endpoint: with no endpoint,
 * the change pays for one index probe per row. Append to a statement's WITH list; a statement
 * uses it once (the names are fixed). Every value comes from `source`'s expressions, which are
 * SQL of the caller's statement (columns, parameters), never data.
 */
export function outboxCtes(source: OutboxSource): string {
  const { from, type, appId, environment, subject, snapshot, traceparent } = source;
  return `webhook_events_new AS (
     INSERT INTO webhook_events (id, app_id, environment, type, subject, snapshot, traceparent)
     SELECT 'evt_' || replace(gen_random_uuid()::text, '-', ''), ${appId}, ${environment},
            '${type}', ${subject}, ${snapshot}, nullif(${traceparent}, '')
       FROM ${from}
      WHERE (${source.where ?? 'true'})
        AND EXISTS (SELECT 1 FROM webhook_endpoints subscribed
                     WHERE subscribed.app_id = ${appId} AND subscribed.environment = ${environment}
                       AND subscribed.disabled_at IS NULL
                       AND '${type}' = ANY (subscribed.event_types))
     RETURNING id, app_id, environment, type, subject, seq
   ),
   webhook_deliveries_new AS (
     INSERT INTO webhook_deliveries (id, event_id, endpoint_id, subject, seq)
     SELECT 'dlv_' || replace(gen_random_uuid()::text, '-', ''), event.id, endpoint.id,
            event.subject, event.seq
       FROM webhook_events_new event
       JOIN webhook_endpoints endpoint
         ON endpoint.app_id = event.app_id AND endpoint.environment = event.environment
        AND endpoint.disabled_at IS NULL AND event.type = ANY (endpoint.event_types)
     RETURNING id
   )`;
}
