import type { IncomingHttpHeaders } from 'node:http';
import type { Environment } from '@linkservice/db';

export interface LinkHost {
  subdomainKey: string;
  environment: Environment;
}

/** The rule apps are created under: 3–63 of a-z 0-9 -, starting and ending alphanumeric. */
const SUBDOMAIN_KEY = /^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;
const TEST_SUFFIX = '-test';

/**
 * The host a request was sent to: `Host`, or the first `X-Forwarded-Host` value when the
 * deployment trusts its proxy to set it (a proxy chain appends, so the first is the client's).
 */
export function requestHost(
  headers: IncomingHttpHeaders,
  trustForwardedHost: boolean,
): string | undefined {
  if (trustForwardedHost) {
    const forwarded = headers['x-forwarded-host'];
    const value = Array.isArray(forwarded) ? forwarded[0] : forwarded;
    if (value) {
      const comma = value.indexOf(',');
      return (comma === -1 ? value : value.slice(0, comma)).trim();
    }
  }
  return headers.host;
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
