import type { StoredLink } from '@linkservice/contracts';
import { formatTimestamp, toLink } from '@linkservice/contracts';
import type { WebhookEventType } from './event-types';

/** An outbox row as the delivery reads it, with its app's subdomain key. */
export interface OutboxEvent {
  id: string;
  type: WebhookEventType;
  occurredAt: Date;
  snapshot: Record<string, unknown>;
  subdomainKey: string;
}

/** The links columns that are timestamptz: to_jsonb wrote them as ISO strings. */
const TIMESTAMP_COLUMNS = ['expires_at', 'archived_at', 'created_at', 'updated_at'] as const;

/** A link's row as to_jsonb(row) stored it, back in the types toLink reads. */
export function storedLinkOf(snapshot: Record<string, unknown>): StoredLink {
  const row: Record<string, unknown> = { ...snapshot };
  for (const column of TIMESTAMP_COLUMNS) {
    const value = row[column];
    if (typeof value === 'string') row[column] = new Date(value);
  }
  return row as unknown as StoredLink;
}

/**
 * The body an event is delivered with, Standard Webhooks' shape: `type`, `timestamp` (when the
 * change happened) and `data`. A link event's data is the link as the API shows it, as the
 * change left it (status as at that moment); an install event's was written in the API's shape
 * by its statement. Deterministic: every attempt sends the same bytes.
 */
export function eventPayload(event: OutboxEvent, linkDomain: string): string {
  const data = event.type.startsWith('link.')
    ? toLink(storedLinkOf(event.snapshot), {
        subdomainKey: event.subdomainKey,
        linkDomain,
        now: event.occurredAt,
      })
    : event.snapshot;
  return JSON.stringify({ type: event.type, timestamp: formatTimestamp(event.occurredAt), data });
}
