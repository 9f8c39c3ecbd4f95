import type { IncomingHttpHeaders } from 'node:http';

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
