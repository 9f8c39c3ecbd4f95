import { contentSecurityPolicy, escapeHtml } from './html';

export interface PreviewPageInput {
  /** The link's title, else its alias. */
  title: string;
  /** The link's own URL (linkUrlFor): what a preview links to and calls canonical. */
  linkUrl: string;
}

/** Text and metadata only: no script, no style, nothing to load. */
export const PREVIEW_PAGE_HEADERS = {
  'Content-Security-Policy': contentSecurityPolicy({}),
} as const;

/**
 * What a link-preview fetcher (crawler, unfurler) gets for a resolving link instead of the
 * redirect: a card titled with the link's title and pointing at the link's own URL, so the
 * preview shows the link as shared (not whatever the fallback page says) and tapping it still
 * goes through the link host (and counts).
 */
export function renderPreviewPage({ title, linkUrl }: PreviewPageInput): Buffer {
  const t = escapeHtml(title);
  const url = escapeHtml(linkUrl);
  return Buffer.from(
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
      `<title>${t}</title>` +
      `<meta property="og:title" content="${t}">` +
      '<meta property="og:type" content="website">' +
      `<meta property="og:url" content="${url}">` +
      '<meta name="twitter:card" content="summary">' +
      `<link rel="canonical" href="${url}">` +
      `</head><body><h1>${t}</h1><p><a href="${url}">${url}</a></p></body></html>\n`,
  );
}
