import {
  DIRECT_REFERRER,
  MAX_REFERRER_LENGTH,
  MAX_UTM_LENGTH,
  NO_UTM,
  UNKNOWN_COUNTRY,
} from './analytics-dimensions';

// Control characters (C0, DEL, C1): never part of a stored value.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const WHITESPACE = /\s+/g;
const PLAIN = /^[a-z0-9_.-]+$/;

/**
 * A UTM parameter's value as it is counted: control characters removed, whitespace collapsed,
 * trimmed, lower-cased, at most MAX_UTM_LENGTH characters; absent or blank is NO_UTM.
 */
export function normaliseUtm(raw: string | null): string {
  if (raw === null) return NO_UTM;
  // Most values are already plain: nothing to do (the redirect calls this on every click).
  if (raw.length <= MAX_UTM_LENGTH && PLAIN.test(raw)) return raw;
  const value = raw.replace(WHITESPACE, ' ').replace(CONTROL, '').trim().toLowerCase();
  if (value === '') return NO_UTM;
  return Array.from(value).slice(0, MAX_UTM_LENGTH).join('');
}

/**
 * The host of a Referer header, the only part of it that is counted: lower-cased, without a
 * trailing dot. DIRECT_REFERRER when there is none, or when it is not an http(s) URL.
 */
export function referrerHost(raw: string | undefined): string {
  if (raw === undefined || raw === '') return DIRECT_REFERRER;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return DIRECT_REFERRER;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return DIRECT_REFERRER;
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (host === '') return DIRECT_REFERRER;
  return host.slice(0, MAX_REFERRER_LENGTH);
}

/** An ISO 3166-1 alpha-2 code (upper case) or UNKNOWN_COUNTRY. */
export function isCountry(value: string): boolean {
  return value === UNKNOWN_COUNTRY || /^[A-Z]{2}$/.test(value);
}
