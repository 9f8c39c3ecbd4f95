import type { LinkRow } from '@linkservice/db';

export type LinkStatus = 'active' | 'archived' | 'expired';

/** archived when archivedAt is set; else expired when expiresAt <= now; else active. */
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

/** A links row as toLink reads it; search_text is the database's own (a generated column). */
export type StoredLink = Omit<LinkRow, 'search_text'>;
