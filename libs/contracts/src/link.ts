import type { LinkRow } from '@linkservice/db';

/** A link's statuses, in the order the API document lists them. */
export const LINK_STATUSES = ['active', 'archived', 'expired'] as const;

export type LinkStatus = (typeof LINK_STATUSES)[number];

/**
 * archived when archivedAt is set; else expired when expiresAt <= now; else active. The SQL copy
 * is the gateway's `linkStatusIs` (list-query.sql.ts), the link host's is link-cache's
 * `redirectsAt` (and its Lua); LINK_STATUS_CASES (link-status.cases.ts) is run against each.
 */
export function linkStatus(
  link: { archived_at: Date | null; expires_at: Date | null },
  now: Date = new Date(),
): LinkStatus {
  if (link.archived_at) return 'archived';
  if (link.expires_at && link.expires_at.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

/** `YYYY-MM-DDThh:mm:ss.sssZ` */
export function formatTimestamp(date: Date): string {
  return date.toISOString();
}

/** `YYYY-MM-DDThh:mm:ssZ` (expiresAt is stored and shown at second precision). */
export function formatExpiry(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface LinkContext {
  subdomainKey: string;
  linkDomain: string;
  now?: Date;
}

/**
 * A link as toLink reads it: its links row (search_text is the database's own, a generated
 * column) and its click count, which lives in link_clicks. Reads join the count in; a row
 * straight from the worker's INSERT has none, and shows 0, since no click can come before its
 * link exists.
 */
export type StoredLink = Omit<LinkRow, 'search_text'> & { click_count?: number };
