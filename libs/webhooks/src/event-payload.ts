import type { StoredLink } from '@linkservice/contracts';
import { formatTimestamp, linkUrlFor, toLink } from '@linkservice/contracts';
import type { Environment } from '@linkservice/db';
import type { WebhookEventType } from './event-types';

/** An outbox row as the delivery reads it, with its app's subdomain key. */
export interface OutboxEvent {
  id: string;
  type: WebhookEventType;
  environment: Environment;
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

/** What an install.matched statement stored (see the gateway's installs repository). */
interface InstallMatchedSnapshot {
  installId: string;
  platform: string;
  method: string;
  clickedAt: string | null;
  linkId: string;
  alias: string;
  deepLinkData: unknown;
}

/** What an install.erased statement stored. */
interface InstallErasedSnapshot {
  installId: string;
  erasedAt: string;
  records: number;
}

const isoOf = (text: string) => formatTimestamp(new Date(text));

/**
 * An event's `data`: the resource as the API shows it, as the change left it. A link event's is
 * the link (status as at that moment); install.matched's is the install report's answer without
 * its secret (the install, the match, the link and its deep link data); install.erased's is the
 * erasure's `erased` object.
 */
function eventData(event: OutboxEvent, linkDomain: string): unknown {
  switch (event.type) {
    case 'link.created':
    case 'link.updated':
    case 'link.archived':
      return toLink(storedLinkOf(event.snapshot), {
        subdomainKey: event.subdomainKey,
        linkDomain,
        now: event.occurredAt,
      });
    case 'install.matched': {
      const matched = event.snapshot as unknown as InstallMatchedSnapshot;
      return {
        install: { id: matched.installId, platform: matched.platform },
        match: {
          type: 'deterministic',
          method: matched.method,
          clickedAt: matched.clickedAt === null ? null : isoOf(matched.clickedAt),
        },
        link: {
          id: matched.linkId,
          alias: matched.alias,
          url: linkUrlFor(event.subdomainKey, event.environment, matched.alias, linkDomain),
          environment: event.environment,
        },
        deepLinkData: matched.deepLinkData ?? null,
      };
    }
    case 'install.erased': {
      const erased = event.snapshot as unknown as InstallErasedSnapshot;
      return {
        installId: erased.installId,
        environment: event.environment,
        erasedAt: isoOf(erased.erasedAt),
        records: erased.records,
      };
    }
  }
}

/**
 * The body an event is delivered with, Standard Webhooks' shape: `type`, `timestamp` (when the
 * change happened) and `data` (eventData). Deterministic: every attempt sends the same bytes.
 */
export function eventPayload(event: OutboxEvent, linkDomain: string): string {
  return JSON.stringify({
    type: event.type,
    timestamp: formatTimestamp(event.occurredAt),
    data: eventData(event, linkDomain),
  });
}
