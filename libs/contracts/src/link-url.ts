import type { Environment } from '@linkservice/db';
import { readScanMarker } from './qr-scan';

/**
 * Link URLs, one format for everyone who builds or reads one: the API's `url` field, the link
 * host (redirect service) reading a request, and the app interface's resolve reading the URL an
 * app was opened with. `https://<subdomainKey>.<linkDomain>/<alias>` (live) or
 * `https://<subdomainKey>-test.<linkDomain>/<alias>` (test).
 */

export interface LinkHost {
  subdomainKey: string;
  environment: Environment;
}

/** The rule apps are created under: 3–63 of a-z 0-9 -, starting and ending alphanumeric. */
const SUBDOMAIN_KEY = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
const TEST_SUFFIX = '-test';

/** The live host `<subdomainKey>.<linkDomain>`, or `<subdomainKey>-test.<linkDomain>`. */
export function linkHostFor(subdomainKey: string, environment: Environment, linkDomain: string) {
  return environment === 'live'
    ? `${subdomainKey}.${linkDomain}`
    : `${subdomainKey}-test.${linkDomain}`;
}

/** A link's own URL: the API's `url` field, and what previews and resolve call canonical. */
export function linkUrlFor(
  subdomainKey: string,
  environment: Environment,
  alias: string,
  linkDomain: string,
): string {
  return `https://${linkHostFor(subdomainKey, environment, linkDomain)}/${alias}`;
}

/**
 * `<subdomainKey>.<linkDomain>` is the live host, `<subdomainKey>-test.<linkDomain>` the test
 * host (no subdomain key ends in -test, so the split is unambiguous). Case-insensitive, port
 * and a trailing root dot ignored; anything else (IP literals, deeper names, another domain) is
 * not a link host.
 */
export function parseLinkHost(rawHost: string | undefined, linkDomain: string): LinkHost | null {
  if (!rawHost) return null;
  let host = rawHost.toLowerCase();
  if (host.startsWith('[')) return null; // IPv6 literal
  const colon = host.lastIndexOf(':');
  if (colon !== -1) {
    if (!/^\d{1,5}$/.test(host.slice(colon + 1))) return null;
    host = host.slice(0, colon);
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  const suffixLength = linkDomain.length + 1;
  if (host.length <= suffixLength || !host.endsWith(linkDomain)) return null;
  if (host.charCodeAt(host.length - suffixLength) !== 0x2e /* . */) return null;
  const label = host.slice(0, -suffixLength);

  let subdomainKey = label;
  let environment: Environment = 'live';
  if (label.endsWith(TEST_SUFFIX)) {
    subdomainKey = label.slice(0, -TEST_SUFFIX.length);
    environment = 'test';
  }
  if (!SUBDOMAIN_KEY.test(subdomainKey) || subdomainKey.endsWith(TEST_SUFFIX)) return null;
  return { subdomainKey, environment };
}

/** Letters, digits, `-` and `_`, starting with a letter or digit, at most 128 characters. */
const ALIAS = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/**
 * The alias a path names, or null when it cannot name one (which answers 404 without a lookup).
 * Exactly one segment: `/Promo` is `Promo`, `/Promo/` and `/a/b` name nothing. Percent-escapes
 * are decoded first (RFC 3986 treats `%41` and `A` as the same unreserved character), then the
 * result must be a valid alias, so an escaped `/`, `.` or anything else still names nothing.
 * Case is kept: aliases are case-sensitive.
 */
export function aliasFromPath(path: string): string | null {
  let segment = path.slice(1);
  if (segment.includes('%')) {
    try {
      segment = decodeURIComponent(segment);
    } catch {
      return null; // malformed escape
    }
  }
  return ALIAS.test(segment) ? segment : null;
}

/** A link URL as an app was opened with it: the link it names, and its query. */
export interface OpenedLinkUrl {
  host: LinkHost;
  alias: string;
  /**
   * The URL's query parameters; a name given more than once keeps its last value. Without the
   * scan marker (`qr=1`, qr-scan.ts): it is the link host's, never the app's.
   */
  query: Record<string, string>;
}

/**
 * Reads a URL an app was opened with: `http` or `https`, a link host of `linkDomain` (any port),
 * a path of exactly one alias, any query and fragment; no user name or password. Null for
 * anything else, including a string that is no URL at all.
 */
export function parseLinkUrl(raw: string, linkDomain: string): OpenedLinkUrl | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return null;
  if (url.username !== '' || url.password !== '') return null;
  const host = parseLinkHost(url.host, linkDomain);
  const alias = host ? aliasFromPath(url.pathname) : null;
  if (!host || alias === null) return null;
  // A plain object without a prototype: a parameter named __proto__ is just a name.
  const query: Record<string, string> = Object.create(null) as Record<string, string>;
  const { query: withoutMarker } = readScanMarker(url.search.slice(1));
  for (const [name, value] of new URLSearchParams(withoutMarker)) query[name] = value;
  return { host, alias, query: { ...query } };
}
