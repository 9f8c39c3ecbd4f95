import type { Environment, LinkRow } from '@linkservice/db';

export type LinkStatus = 'active' | 'archived' | 'expired';

/** The Link resource exactly as every API response shows it. */
export interface Link {
  id: string;
  alias: string;
  url: string;
  environment: Environment;
  webFallbackUrl: string;
  iosFallbackUrl: string | null;
  deepLinkData: Record<string, unknown> | null;
  title: string | null;
  campaign: string | null;
  channel: string | null;
  feature: string | null;
  tags: string[];
  expiresAt: string | null;
  archivedAt: string | null;
  createdAt: string;
  updatedAt: string;
  clickCount: number;
  status: LinkStatus;
}

/** archived when archivedAt is set; else expired when expiresAt <= now; else active. */
export function linkStatus(
  link: { archived_at: Date | null; expires_at: Date | null },
  now: Date = new Date(),
): LinkStatus {
  if (link.archived_at) return 'archived';
  if (link.expires_at && link.expires_at.getTime() <= now.getTime()) return 'expired';
  return 'active';
}

/** The live host `<subdomainKey>.<linkDomain>`, or `<subdomainKey>-test.<linkDomain>`. */
export function linkHostFor(subdomainKey: string, environment: Environment, linkDomain: string) {
  return environment === 'live'
    ? `${subdomainKey}.${linkDomain}`
    : `${subdomainKey}-test.${linkDomain}`;
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

export function toLink(row: StoredLink, { subdomainKey, linkDomain, now }: LinkContext): Link {
  const host = linkHostFor(subdomainKey, row.environment, linkDomain);
  return {
    id: row.id,
    alias: row.alias,
    url: `https://${host}/${row.alias}`,
    environment: row.environment,
    webFallbackUrl: row.web_fallback_url,
    iosFallbackUrl: row.ios_fallback_url,
    deepLinkData: row.deep_link_data,
    title: row.title,
    campaign: row.campaign,
    channel: row.channel,
    feature: row.feature,
    tags: row.tags,
    expiresAt: row.expires_at ? formatExpiry(row.expires_at) : null,
    archivedAt: row.archived_at ? formatTimestamp(row.archived_at) : null,
    createdAt: formatTimestamp(row.created_at),
    updatedAt: formatTimestamp(row.updated_at),
    clickCount: row.click_count,
    status: linkStatus(row, now),
  };
}
