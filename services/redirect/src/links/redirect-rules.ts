import type { LinkResolution } from '@linkservice/link-cache';
import { redirectsAt } from '@linkservice/link-cache';

export type RedirectOutcome =
  | { kind: 'not_found' }
  | { kind: 'expired' }
  | { kind: 'redirect'; linkId: string; location: string };

const IOS_DEVICE = /iphone|ipad|ipod/i;

/**
 * iPhone, iPad and iPod browsers and in-app web views. iPadOS Safari in its default desktop mode
 * sends a Mac user agent and cannot be told apart; it gets the web fallback.
 */
export function isIosUserAgent(userAgent: string | undefined): boolean {
  return userAgent !== undefined && IOS_DEVICE.test(userAgent);
}

/**
 * Archived links keep resolving, whatever their expiry; otherwise a link whose expiresAt is not
 * after `now` is expired (`redirectsAt`, the rule the cache's click-counting lookup applies too).
 * The clock is read per request, so a cached link expires on time.
 */
export function redirectOutcome(
  resolution: LinkResolution | null,
  userAgent: string | undefined,
  now: number,
): RedirectOutcome {
  if (resolution === null) return { kind: 'not_found' };
  if (!redirectsAt(resolution, now)) return { kind: 'expired' };
  const target =
    resolution.iosFallbackUrl !== null && isIosUserAgent(userAgent)
      ? resolution.iosFallbackUrl
      : resolution.webFallbackUrl;
  return { kind: 'redirect', linkId: resolution.linkId, location: headerSafeUrl(target) };
}

const HEADER_SAFE = /^[\x21-\x7e]*$/;

/**
 * Fallback URLs are stored as given; one with a space or non-ASCII character would make Node
 * refuse the Location header, so such a URL is sent in its WHATWG-serialised (escaped) form.
 */
export function headerSafeUrl(url: string): string {
  if (HEADER_SAFE.test(url)) return url;
  try {
    return new URL(url).href;
  } catch {
    return encodeURI(url);
  }
}
