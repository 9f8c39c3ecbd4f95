import type { LinkResolution } from '@linkservice/link-cache';
import { redirectsAt } from '@linkservice/link-cache';
import { withPassthroughQuery, withPlayReferrerToken } from './fallback-url';
import type { ClientKind } from './user-agents';

export type RedirectOutcome =
  | { kind: 'not_found' }
  | { kind: 'expired' }
  /** A link-preview fetcher: the preview page; counts nothing. */
  | { kind: 'preview'; linkId: string; title: string | null }
  /** A 302 to `location`; a GET counts a click. */
  | { kind: 'redirect'; linkId: string; location: string }
  /**
   * The iOS "Get the app" page, leading to `fallback`; a GET counts a click and the page carries
   * its `clickToken` (null for a HEAD, which mints none).
   */
  | {
      kind: 'deferred_page';
      linkId: string;
      title: string | null;
      fallback: string;
      clickToken: string | null;
    };

/** The outcomes that are a person following the link: a GET of one counts a click. */
export function countsClick(
  outcome: RedirectOutcome,
): outcome is Extract<RedirectOutcome, { kind: 'redirect' | 'deferred_page' }> {
  return outcome.kind === 'redirect' || outcome.kind === 'deferred_page';
}

/** What the rules need to know about the request, beyond the link. */
export interface LinkRequest {
  client: ClientKind;
  /** The request target's raw query, without `?`; empty when there is none. */
  query: string;
  /** The token minted with this request's click; null when it counts none (HEAD, previews). */
  clickToken: string | null;
}

const WEB_URL = /^https?:\/\//i;

/**
 * Archived links keep resolving, whatever their expiry; otherwise a link whose expiresAt is not
 * after `now` is expired (`redirectsAt`, the rule the cache's click-counting lookup applies too).
 * The clock is read per request, so a cached link expires on time.
 *
 * A resolving link: a previewer gets the preview; an iOS device, when the link has an iOS
 * fallback, goes there (through the deferred page when the app opted in for this environment);
 * everyone else goes to the web fallback, with the click token in the install referrer when that
 * is a Play Store listing. Both fallbacks get the request's query (passthrough).
 */
export function redirectOutcome(
  resolution: LinkResolution | null,
  request: LinkRequest,
  now: number,
): RedirectOutcome {
  if (resolution === null) return { kind: 'not_found' };
  if (!redirectsAt(resolution, now)) return { kind: 'expired' };
  const { linkId } = resolution;
  if (request.client === 'previewer') return { kind: 'preview', linkId, title: resolution.title };

  if (resolution.iosFallbackUrl !== null && request.client === 'ios') {
    const fallback = withPassthroughQuery(headerSafeUrl(resolution.iosFallbackUrl), request.query);
    // The API only stores http(s) fallbacks; anything else is never put in a page's link.
    if (resolution.iosDeferredPage && WEB_URL.test(fallback)) {
      const { title } = resolution;
      return { kind: 'deferred_page', linkId, title, fallback, clickToken: request.clickToken };
    }
    return { kind: 'redirect', linkId, location: fallback };
  }

  const location = withPassthroughQuery(headerSafeUrl(resolution.webFallbackUrl), request.query);
  return {
    kind: 'redirect',
    linkId,
    location:
      request.clickToken === null ? location : withPlayReferrerToken(location, request.clickToken),
  };
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
