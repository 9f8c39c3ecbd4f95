import type { LinkDraft } from '@linkservice/contracts';

/** A valid draft, as the gateway would hand it over, with only `overrides` set. */
export function draft(overrides: Partial<LinkDraft> = {}): LinkDraft {
  return {
    alias: null,
    webFallbackUrl: 'https://example.com/fallback',
    iosFallbackUrl: null,
    deepLinkData: null,
    title: null,
    campaign: null,
    channel: null,
    feature: null,
    tags: [],
    expiresAt: null,
    ...overrides,
  };
}
