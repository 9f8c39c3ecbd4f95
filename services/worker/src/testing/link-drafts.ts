import type { LinkDraft } from '@linkservice/contracts';
import { LINK_DRAFT_DEFAULTS } from '@linkservice/contracts';

/** A valid draft, as the gateway would hand it over, with only `overrides` set. */
export function draft(overrides: Partial<LinkDraft> = {}): LinkDraft {
  return { ...LINK_DRAFT_DEFAULTS, webFallbackUrl: 'https://example.com/fallback', ...overrides };
}
