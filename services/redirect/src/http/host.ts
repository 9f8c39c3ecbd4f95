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

/**
 * The client's address: the connection's, or the first `X-Forwarded-For` entry when the
 * deployment trusts its proxy to set it. Used for a click's country and visitor, never kept.
 */
export function clientAddress(
  req: { headers: IncomingHttpHeaders; socket: { remoteAddress?: string } },
  trustForwardedFor: boolean,
): string | undefined {
  if (trustForwardedFor) {
    const forwarded = req.headers['x-forwarded-for'];
    const value = Array.isArray(forwarded) ? forwarded[0] : forwarded;
    if (value) {
      const comma = value.indexOf(',');
      const first = (comma === -1 ? value : value.slice(0, comma)).trim();
      if (first !== '') return first;
    }
  }
  return req.socket.remoteAddress;
}
