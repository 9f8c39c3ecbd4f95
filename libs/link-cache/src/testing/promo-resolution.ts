import type { LinkResolution } from '../resolution';

/**
 * A cached link for the tests of the packages that fill and read the cache (link-cache, the
 * redirect's counting lookups): it redirects until 2030, so tests read it at 2029.
 */
export const PROMO_RESOLUTION: LinkResolution = {
  linkId: 'lnk_1',
  webFallbackUrl: 'https://example.com/web',
  iosFallbackUrl: null,
  expiresAt: Date.UTC(2030, 0, 1),
  archived: false,
  title: 'Promo',
  iosDeferredPage: false,
};
