import { z } from 'zod';
import type {
  AnalyticsColumn,
  AnalyticsDimension,
  AnalyticsInterval,
} from '@linkservice/contracts';
import {
  ANALYTICS_DIMENSIONS,
  ANALYTICS_DIMENSION_NAMES,
  ANALYTICS_INTERVALS,
  BROWSER_FAMILIES,
  CLICK_SOURCES,
  DEFAULT_ANALYTICS_LIMIT,
  DIRECT_REFERRER,
  MAX_ANALYTICS_LIMIT,
  MAX_ANALYTICS_RANGE_DAYS,
  MAX_HOURLY_RANGE_DAYS,
  MAX_REFERRER_LENGTH,
  OS_FAMILIES,
  OTHER_VALUE,
  PLATFORMS,
  UNKNOWN_COUNTRY,
  normaliseUtm,
  parseZonedTimestamp,
} from '@linkservice/contracts';
import type { FieldErrors } from '../http/errors';
import { readQuery } from '../http/query-reader';

export const DAY_MS = 86_400_000;
export const HOUR_MS = 3_600_000;
/** Without `from`: this many days before `to`. */
export const DEFAULT_RANGE_DAYS = 30;

/** One filter per dimension at most, by its column, with the value as stored. */
export type AnalyticsFilters = Partial<Record<AnalyticsColumn, string>>;

/** GET /analytics and GET /links/{linkId}/analytics, parsed. */
export interface AnalyticsQuery {
  from: Date;
  to: Date;
  interval: AnalyticsInterval;
  /** The breakdown's dimension, by its column; null: no breakdown. */
  groupBy: AnalyticsColumn | null;
  limit: number;
  filters: AnalyticsFilters;
  /** Only links carrying this tag (GET /analytics only). */
  tag: string | null;
}

export type AnalyticsParse =
  { ok: true; query: AnalyticsQuery } | { ok: false; fields: FieldErrors };

const COLUMN_OF = Object.fromEntries(
  ANALYTICS_DIMENSIONS.map((dimension) => [dimension.name, dimension.column]),
) as Record<AnalyticsDimension, AnalyticsColumn>;

const HOST = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** Each dimension's filter: the value as stored, or the message of a 422. */
const FILTERS: Record<AnalyticsDimension, (raw: string) => string | { error: string }> = {
  country: (raw) => {
    const value = raw.trim();
    if (value.toLowerCase() === UNKNOWN_COUNTRY) return UNKNOWN_COUNTRY;
    return /^[A-Za-z]{2}$/.test(value)
      ? value.toUpperCase()
      : { error: `must be an ISO 3166-1 alpha-2 code or "${UNKNOWN_COUNTRY}"` };
  },
  platform: oneOf(PLATFORMS),
  os: oneOf(OS_FAMILIES),
  browser: oneOf(BROWSER_FAMILIES),
  referrer: (raw) => {
    const value = raw.trim().toLowerCase().replace(/\.$/, '');
    if (value === DIRECT_REFERRER || value === OTHER_VALUE) return value;
    return value.length <= MAX_REFERRER_LENGTH && HOST.test(value)
      ? value
      : { error: `must be a host name, "${DIRECT_REFERRER}" or "${OTHER_VALUE}"` };
  },
  utmSource: utm,
  utmMedium: utm,
  utmCampaign: utm,
  source: oneOf(CLICK_SOURCES),
};

function oneOf(values: readonly string[]) {
  return (raw: string) => {
    const value = raw.trim().toLowerCase();
    return values.includes(value) ? value : { error: `must be one of ${values.join(', ')}` };
  };
}

function utm(raw: string): string | { error: string } {
  return raw.trim() === '' ? { error: 'must not be empty' } : normaliseUtm(raw);
}

const KNOWN = new Set([
  'from',
  'to',
  'interval',
  'groupBy',
  'limit',
  'tag',
  ...ANALYTICS_DIMENSION_NAMES,
]);

/** `from`/`to`: an ISO 8601 date-time with its offset, or a date (midnight UTC). */
function instantOf(raw: string): Date | undefined {
  if (DATE_ONLY.test(raw)) return parseZonedTimestamp(`${raw}T00:00:00Z`);
  return parseZonedTimestamp(raw);
}

/**
 * The analytics parameters, every problem named (a 422's `fields`): an unknown parameter, a
 * repeated one, a value out of its list or range. `tag` only where `allowTag` (the app's
 * analytics; a link's have no tag to filter by).
 */
export function parseAnalyticsQuery(
  raw: Record<string, unknown>,
  { allowTag, now }: { allowTag: boolean; now: Date },
): AnalyticsParse {
  const { fields, text } = readQuery(
    raw,
    (name) => KNOWN.has(name) && (name !== 'tag' || allowTag),
  );

  const toText = text('to');
  const fromText = text('from');
  let to = now;
  if (toText !== undefined) {
    const parsed = instantOf(toText);
    if (parsed) to = parsed;
    else fields.to = 'must be an ISO 8601 date-time with an offset, or a date (YYYY-MM-DD)';
  }
  let from = new Date(to.getTime() - DEFAULT_RANGE_DAYS * DAY_MS);
  if (fromText !== undefined) {
    const parsed = instantOf(fromText);
    if (parsed) from = parsed;
    else fields.from = 'must be an ISO 8601 date-time with an offset, or a date (YYYY-MM-DD)';
  }

  const intervalText = text('interval');
  const interval = z.enum(ANALYTICS_INTERVALS).safeParse(intervalText ?? 'day').data;
  if (interval === undefined) fields.interval = `must be one of ${ANALYTICS_INTERVALS.join(', ')}`;

  if (!('from' in fields) && !('to' in fields)) {
    const span = to.getTime() - from.getTime();
    if (span <= 0) fields.to = 'must be after from';
    else if (span > MAX_ANALYTICS_RANGE_DAYS * DAY_MS)
      fields.to = `must be at most ${MAX_ANALYTICS_RANGE_DAYS} days after from`;
    else if (interval === 'hour' && span > MAX_HOURLY_RANGE_DAYS * DAY_MS)
      fields.interval = `hour needs a range of at most ${MAX_HOURLY_RANGE_DAYS} days`;
  }

  const groupByText = text('groupBy');
  let groupBy: AnalyticsColumn | null = null;
  if (groupByText !== undefined) {
    const dimension = z.enum(ANALYTICS_DIMENSION_NAMES).safeParse(groupByText).data;
    if (dimension === undefined)
      fields.groupBy = `must be one of ${ANALYTICS_DIMENSION_NAMES.join(', ')}`;
    else groupBy = COLUMN_OF[dimension];
  }

  const limitText = text('limit');
  let limit = DEFAULT_ANALYTICS_LIMIT;
  if (limitText !== undefined) {
    const parsed = /^\d{1,4}$/.test(limitText) ? Number(limitText) : NaN;
    if (parsed >= 1 && parsed <= MAX_ANALYTICS_LIMIT) limit = parsed;
    else fields.limit = `must be an integer from 1 to ${MAX_ANALYTICS_LIMIT}`;
  }

  const filters: AnalyticsFilters = {};
  for (const name of ANALYTICS_DIMENSION_NAMES) {
    const value = text(name);
    if (value === undefined) continue;
    const parsed = FILTERS[name](value);
    if (typeof parsed === 'string') filters[COLUMN_OF[name]] = parsed;
    else fields[name] = parsed.error;
  }

  let tag: string | null = null;
  if (allowTag) {
    const value = text('tag');
    if (value !== undefined) {
      if (value === '' || value.includes('\u0000')) fields.tag = 'must be a tag';
      else tag = value;
    }
  }

  if (Object.keys(fields).length > 0 || interval === undefined) return { ok: false, fields };
  return { ok: true, query: { from, to, interval, groupBy, limit, filters, tag } };
}

/** The names the API shows a dimension column by. */
export const DIMENSION_NAME_OF = Object.fromEntries(
  ANALYTICS_DIMENSIONS.map((dimension) => [dimension.column, dimension.name]),
) as Record<AnalyticsColumn, AnalyticsDimension>;
