import type { ClickDimensions, ClickSource } from '@linkservice/contracts';
import { CLICK_SOURCES, normaliseUtm, referrerHost } from '@linkservice/contracts';
import { UNSOURCED_FIELD_PARTS, withLinkSource } from './unsourced-field.compat';
import type { CountryLookup } from './countries';
import type { UserAgentClassifier } from './user-agent-families';
import type { VisitorSalts } from './visitor-salts';
import { dayOf } from './visitor-salts';

const HOUR_MS = 60 * 60 * 1000;
/** Separates the values of a dimension field; no value contains it (control characters go). */
export const FIELD_SEPARATOR = '\u001f';

/** What the link host knows about a click's request, in memory only. */
export interface ClickRequest {
  /** The client's address (socket, or X-Forwarded-For when trusted). */
  address: string | undefined;
  userAgent: string | undefined;
  /** The Referer header. */
  referrer: string | undefined;
  /** The tapped URL's raw query, without `?` (and without the scan marker). */
  query: string;
  /** `qr` when the query carried the scan marker (readScanMarker), else `link`. */
  source: ClickSource;
  /** The trusted country header's value, when one is configured (GEO_COUNTRY_HEADER). */
  countryHeader: string | undefined;
}

/** A counted click's analytics, as the counting call carries them. */
export interface ClickDescription {
  /**
   * Appended to the link id, the field of the pending-clicks hash this click's dimensions are
   * counted under: `␟<hour>␟<h|b>␟<country>␟…␟<utm_campaign>␟<source>` (`encodeDimensions`).
   */
  dimensions: string;
  /** The visitor (an HMAC under the day's salt), '' for none: a bot, or no salt yet. */
  visitor: string;
  /** The click's UTC day (days since the epoch): its visitor counts for that day. */
  day: number;
}

/** The dimension field's suffix for a click at `hour` (hours since the epoch). */
export function encodeDimensions(hour: number, bot: boolean, values: ClickDimensions): string {
  const s = FIELD_SEPARATOR;
  return (
    `${s}${hour}${s}${bot ? 'b' : 'h'}${s}${values.country}${s}${values.platform}${s}${values.os}` +
    `${s}${values.browser}${s}${values.referrer}${s}${values.utm_source}${s}${values.utm_medium}` +
    `${s}${values.utm_campaign}${s}${values.source}`
  );
}

/** A dimension field of the pending hash, read back by the flusher. */
export interface DimensionCount extends ClickDimensions {
  linkId: string;
  hour: number;
  bot: boolean;
}

/**
 * `<link id>␟<day>`: the field the counting script sets when a click added a new visitor to its
 * link's HyperLogLog of that day: the flusher then reads that day's count (PFCOUNT) for the
 * link, and only then.
 */
export function visitorsField(linkId: string, day: number): string {
  return `${linkId}${FIELD_SEPARATOR}${day}`;
}

/** What a field of a pending-clicks hash (or of a batch) counts. */
export type ClickField =
  | { kind: 'clicks'; linkId: string }
  | ({ kind: 'dimensions' } & DimensionCount)
  | { kind: 'visitors'; linkId: string; day: number };

/** A field of click counts that is a link id (its clicks), not a link id and more. */
export function isLinkIdField(field: string): boolean {
  return !field.includes(FIELD_SEPARATOR);
}

/** Reads a field of the pending hash; null for one that none of these is. */
export function parseClickField(field: string): ClickField | null {
  if (isLinkIdField(field)) return { kind: 'clicks', linkId: field };
  const parts = field.split(FIELD_SEPARATOR);
  if (parts.length === 2) {
    const day = Number(parts[1]);
    return Number.isSafeInteger(day) ? { kind: 'visitors', linkId: parts[0], day } : null;
  }
  const dimensions = parseDimensionField(field);
  return dimensions === null ? null : { kind: 'dimensions', ...dimensions };
}

const SOURCES: ReadonlySet<string> = new Set(CLICK_SOURCES);

/** Parses `<link id><suffix>`; null when `field` is not a dimension field. */
export function parseDimensionField(field: string): DimensionCount | null {
  let parts = field.split(FIELD_SEPARATOR);
  if (parts.length === UNSOURCED_FIELD_PARTS) parts = withLinkSource(parts);
  if (parts.length !== 12) return null;
  const [linkId, hour, bot, country, platform, os, browser, referrer, utmSource, medium, campaign] =
    parts;
  const source = parts[11];
  const hourNumber = Number(hour);
  if (!Number.isSafeInteger(hourNumber) || (bot !== 'h' && bot !== 'b')) return null;
  if (!SOURCES.has(source)) return null;
  return {
    linkId,
    hour: hourNumber,
    bot: bot === 'b',
    country,
    platform,
    os,
    browser,
    referrer,
    utm_source: utmSource,
    utm_medium: medium,
    utm_campaign: campaign,
    source,
  };
}

export interface ClickAnalyticsOptions {
  countries: CountryLookup;
  userAgents: UserAgentClassifier;
  salts: VisitorSalts;
}

/**
 * Reduces a click's request to what analytics keep: its hour, country, platform, OS and browser
 * families, the referrer's host, the three UTM values, its source (a tap or a QR code's scan),
 * whether it is a bot's, and its visitor
 * (an HMAC under the day's salt). The address, the user agent, the referrer's URL and the rest
 * of the query are read here and dropped.
 */
export class ClickAnalytics {
  constructor(private readonly options: ClickAnalyticsOptions) {}

  describe(request: ClickRequest, at: number): ClickDescription {
    const { countries, userAgents, salts } = this.options;
    const families = userAgents.classify(request.userAgent);
    const utm =
      request.query === '' || !request.query.includes('utm_')
        ? null
        : new URLSearchParams(request.query);
    const dimensions = encodeDimensions(Math.floor(at / HOUR_MS), families.bot, {
      country: countries.countryOf(request.address, request.countryHeader),
      platform: families.platform,
      os: families.os,
      browser: families.browser,
      referrer: referrerHost(request.referrer),
      utm_source: normaliseUtm(utm?.get('utm_source') ?? null),
      utm_medium: normaliseUtm(utm?.get('utm_medium') ?? null),
      utm_campaign: normaliseUtm(utm?.get('utm_campaign') ?? null),
      source: request.source,
    });
    const visitor =
      families.bot || request.address === undefined
        ? ''
        : salts.visitorOf(at, request.address, request.userAgent ?? '');
    return { dimensions, visitor, day: dayOf(at) };
  }
}
