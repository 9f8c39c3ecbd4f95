import { DateTime } from 'luxon';
import { z } from 'zod';
import { formatExpiry } from './link';
import { isReservedAlias } from './reserved-aliases';

/**
 * One rule per Link field a caller may send, shared by create and PATCH (the field table,
 * link-field-table.ts, names each field's rule and describes its input for the API document). Each rule checks one
 * value and returns its normalised form or a message for people. Lengths count characters (code
 * points), not UTF-16 units, so a 200-emoji title fits the 200-character limit. deepLinkData is
 * the exception: decisions.md measures it "as JSON.stringify writes it", so it counts the UTF-16
 * units of that text, the length any JS client measuring its own JSON gets.
 */

export const LIMITS = {
  aliasLength: 128,
  urlLength: 2048,
  deepLinkDataLength: 8000,
  /** How deep objects and arrays nest in a request body, the body itself being level 1. */
  bodyDepth: 128,
  textLength: 200,
  tagLength: 60,
  tagCount: 25,
} as const;

export type FieldOutcome<T> = { ok: true; value: T } | { ok: false; message: string };

/** `now` decides what "in the future" means for expiresAt. */
export type FieldRule<T> = (value: unknown, now: Date) => FieldOutcome<T>;

export const MESSAGES = {
  alias: `must be 1-${LIMITS.aliasLength} characters of letters, digits, - and _, starting with a letter or digit`,
  aliasReserved: 'is a reserved word; choose another alias',
  aliasUnchangeable: 'cannot be changed after creation',
  required: 'is required',
  webFallbackUrl: `must be an absolute http or https URL with a host, at most ${LIMITS.urlLength} characters`,
  iosFallbackUrl: `must be an absolute http or https URL with a host, at most ${LIMITS.urlLength} characters, or null`,
  deepLinkDataType: 'must be a JSON object or null',
  deepLinkDataLength: `must be at most ${LIMITS.deepLinkDataLength} characters once serialised as JSON`,
  deepLinkDataUnstorable: 'must not contain NUL characters or unpaired UTF-16 surrogates',
  text: `must be a string of at most ${LIMITS.textLength} characters, or null`,
  unstorable: 'must not contain NUL characters or unpaired UTF-16 surrogates',
  tags: 'must be an array of strings',
  tag: (index: number) =>
    `each tag must be a string of 1-${LIMITS.tagLength} characters without NUL characters; tags[${index}] is not`,
  expiresAt:
    'must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2030-01-31T12:00:00Z, or null',
  expiresAtPast: 'must be in the future',
  serverSet: 'is set by the server and cannot be sent',
  unknown: 'is not a field of a link',
} as const;

/** Code points, counted without allocating; `.length` is an upper bound for them. */
export function characterCount(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    // A high surrogate followed by a low one is a single character.
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

function fitsIn(max: number) {
  return (value: string) => value.length <= max || characterCount(value) <= max;
}

/**
 * Postgres text and jsonb reject NUL, and jsonb rejects unpaired surrogates; refusing them here
 * makes them a 422 for the caller instead of a failed insert.
 */
const UNSTORABLE = /[\0\p{Cs}]/u;
function storable(value: string): boolean {
  return !UNSTORABLE.test(value);
}

function fromSchema<T>(schema: z.ZodType<T>): FieldRule<T> {
  return (value) => {
    const result = schema.safeParse(value);
    if (result.success) return { ok: true, value: result.data };
    return { ok: false, message: result.error.issues[0]?.message ?? 'is invalid' };
  };
}

const ALIAS_PATTERN = new RegExp(`^[A-Za-z0-9][A-Za-z0-9_-]{0,${LIMITS.aliasLength - 1}}$`);

/** What an alias may look like; the field table describes it for the API document. */
export const aliasSyntax = z
  .string({ error: MESSAGES.alias })
  .regex(ALIAS_PATTERN, { error: MESSAGES.alias });

/** A caller-chosen alias (null, meaning "generate one", is handled by the create parser). */
export const aliasRule: FieldRule<string> = fromSchema(
  aliasSyntax.refine((alias) => !isReservedAlias(alias), {
    error: MESSAGES.aliasReserved,
    abort: true,
  }),
);

/**
 * An absolute http(s) URL with a host. The scheme is checked on the text itself because WHATWG
 * parsing is lenient (it reads `http:example.com` as `http://example.com/` and `http:///path` as
 * host `path`); whitespace and control characters are refused because such a string is not a URL
 * a redirect can send as is.
 */
export function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\/[^/\\?#\s\p{Cc}][^\s\p{Cc}]*$/iu.test(value)) return false;
  try {
    return new URL(value).hostname !== '';
  } catch {
    return false;
  }
}

/** An absolute http(s) URL with a host, at most LIMITS.urlLength characters. */
export function urlSyntax(message: string) {
  return z
    .string({ error: message })
    .refine(fitsIn(LIMITS.urlLength), { error: message, abort: true })
    .refine(isHttpUrl, { error: message });
}

/**
 * How the API document states urlSyntax: the length is counted in code points as JSON Schema's
 * maxLength counts it, so the document states the check as it is (zod's .max() would count
 * UTF-16 units). `iri`, not `uri`: the rule takes non-ASCII characters as sent
 * (`https://example.com/ü`), which RFC 3986 would refuse.
 */
export const URL_FORMAT = { format: 'iri', maxLength: LIMITS.urlLength } as const;

const webFallbackUrlRuleOfSchema = fromSchema(urlSyntax(MESSAGES.webFallbackUrl));

/** Required: null is refused like a missing value. */
export const webFallbackUrlRule: FieldRule<string> = (value, now) =>
  value === null
    ? { ok: false, message: MESSAGES.required }
    : webFallbackUrlRuleOfSchema(value, now);

export const iosFallbackUrlRule: FieldRule<string | null> = fromSchema(
  urlSyntax(MESSAGES.iosFallbackUrl).nullable(),
);

/**
 * Every level of nesting writes at least its two brackets, so data nested deeper than this is over
 * the length limit whatever it holds.
 */
const DEEP_LINK_DATA_MAX_DEPTH = LIMITS.deepLinkDataLength / 2;

type DeepLinkDataScan = { tooDeep: true } | { tooDeep: false; storable: boolean };

/**
 * Walks with an explicit stack, not recursion: JSON.parse builds nesting far deeper than any
 * recursive walk (JSON.stringify included) survives. Stopping past the depth that already breaks
 * the length limit means JSON.stringify only ever sees data it can serialise.
 */
function scanDeepLinkData(data: object): DeepLinkDataScan {
  let storableSoFar = true;
  const pending: { value: unknown; depth: number }[] = [{ value: data, depth: 1 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { value, depth } = next;
    if (typeof value === 'string') {
      storableSoFar &&= storable(value);
    } else if (typeof value === 'object' && value !== null) {
      if (depth > DEEP_LINK_DATA_MAX_DEPTH) return { tooDeep: true };
      if (Array.isArray(value)) {
        for (const item of value as unknown[]) pending.push({ value: item, depth: depth + 1 });
      } else {
        for (const [key, inner] of Object.entries(value)) {
          storableSoFar &&= storable(key);
          pending.push({ value: inner, depth: depth + 1 });
        }
      }
    }
  }
  return { tooDeep: false, storable: storableSoFar };
}

function serialisedLength(value: object): number | undefined {
  try {
    return JSON.stringify(value).length;
  } catch {
    // Only values that did not come from JSON (BigInt, a throwing toJSON) can get here.
    return undefined;
  }
}

export const deepLinkDataRule: FieldRule<Record<string, unknown> | null> = (value) => {
  if (value === null) return { ok: true, value: null };
  if (typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, message: MESSAGES.deepLinkDataType };
  }
  const scan = scanDeepLinkData(value);
  if (scan.tooDeep) return { ok: false, message: MESSAGES.deepLinkDataLength };
  const length = serialisedLength(value);
  if (length === undefined) return { ok: false, message: MESSAGES.deepLinkDataType };
  if (length > LIMITS.deepLinkDataLength) {
    return { ok: false, message: MESSAGES.deepLinkDataLength };
  }
  if (!scan.storable) return { ok: false, message: MESSAGES.deepLinkDataUnstorable };
  return { ok: true, value: value as Record<string, unknown> };
};

/** title, campaign, channel and feature accept this; the field table describes each. */
export const textInput = z
  .string({ error: MESSAGES.text })
  .refine(fitsIn(LIMITS.textLength), { error: MESSAGES.text, abort: true })
  .refine(storable, { error: MESSAGES.unstorable })
  .meta({ maxLength: LIMITS.textLength })
  .nullable();

/** title, campaign, channel and feature. */
export const textRule: FieldRule<string | null> = fromSchema(textInput);

/** One tag; the field table's `tags` input is an array of these. */
export const tagSchema = z
  .string()
  .min(1)
  .refine(fitsIn(LIMITS.tagLength), { abort: true })
  .refine(storable)
  .meta({ maxLength: LIMITS.tagLength });

/**
 * Every tag is checked before any is dropped, so an invalid tag is reported even past the 25th.
 * Then duplicates go (first kept) and the list is cut to 25, silently, as the spec asks. Checked
 * element by element rather than by an array schema's safeParse, whose first issue need not name the
 * first bad index.
 */
export const tagsRule: FieldRule<string[]> = (value) => {
  if (!Array.isArray(value)) return { ok: false, message: MESSAGES.tags };
  const tags: unknown[] = value;
  const badIndex = tags.findIndex((tag) => !tagSchema.safeParse(tag).success);
  if (badIndex !== -1) return { ok: false, message: MESSAGES.tag(badIndex) };
  const unique = [...new Set(tags as string[])];
  return { ok: true, value: unique.slice(0, LIMITS.tagCount) };
};

/**
 * A complete date, T, a time, then Z or an offset of at most ±23:59 written ±hh:mm, ±hhmm or ±hh.
 * The date is calendar (YYYY-MM-DD), week (YYYY-Www-D) or ordinal (YYYY-DDD); the time is hh, hh:mm
 * or hh:mm:ss, its last part optionally with a fraction; both use the same format, extended as
 * written here or basic without - and : (YYYYMMDDThhmmss), as ISO 8601 requires. T and Z may be
 * lowercase. Luxon alone would also take reduced dates (2030T10Z, 2030-01T10Z, read as January 1),
 * mixed basic and extended text, a date or a time without a zone (reading it in a default zone, or
 * as today), +24:00, +99:99 and a bracketed IANA zone name. Luxon checks the values themselves
 * (month 13, February 30, hour 25) and reads a fraction of the second only, so a fraction of an
 * hour or a minute fits this shape but is still refused.
 */
const TIME_FRACTION = String.raw`(?:[.,]\d+)?`;
const EXTENDED_DATE_TIME = String.raw`\d{4}-(?:\d{2}-\d{2}|W\d{2}-\d|\d{3})[Tt]\d{2}(?::\d{2}(?::\d{2})?)?${TIME_FRACTION}`;
const BASIC_DATE_TIME = String.raw`\d{4}(?:\d{4}|W\d{3}|\d{3})[Tt]\d{2}(?:\d{2}(?:\d{2})?)?${TIME_FRACTION}`;
const ZONE = String.raw`[Zz]|[+-](?:[01]\d|2[0-3])(?::?[0-5]\d)?`;
export const DATE_TIME_WITH_ZONE = new RegExp(
  `^(?:${EXTENDED_DATE_TIME}|${BASIC_DATE_TIME})(?:${ZONE})$`,
);

/**
 * Reads any ISO 8601 date-time that names its zone (calendar, week or ordinal date, basic or
 * extended format), truncated to the second. Text without a zone is refused, not read in the
 * server's zone.
 */
export function parseZonedTimestamp(text: string): Date | undefined {
  if (!DATE_TIME_WITH_ZONE.test(text)) return undefined;
  // In UTC, so that the year checked below is the one formatExpiry prints.
  const parsed = DateTime.fromISO(text, { zone: 'utc' });
  if (!parsed.isValid) return undefined;
  const instant = parsed.startOf('second');
  // formatExpiry prints `YYYY-MM-DDThh:mm:ssZ` only for four-digit years.
  if (instant.year < 0 || instant.year > 9999) return undefined;
  return instant.toJSDate();
}

/** Normalised to `YYYY-MM-DDThh:mm:ssZ`; the truncated instant must still lie after `now`. */
export const expiresAtRule: FieldRule<string | null> = (value, now) => {
  if (value === null) return { ok: true, value: null };
  const instant = typeof value === 'string' ? parseZonedTimestamp(value) : undefined;
  if (!instant) return { ok: false, message: MESSAGES.expiresAt };
  if (instant.getTime() <= now.getTime()) return { ok: false, message: MESSAGES.expiresAtPast };
  return { ok: true, value: formatExpiry(instant) };
};
