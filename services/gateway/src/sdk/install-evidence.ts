import type { LinkHost } from '@linkservice/contracts';
import { parseLinkUrl } from '@linkservice/contracts';
import { CLICK_TOKEN_PARAMETER, hashClickToken, isClickToken } from '@linkservice/link-cache';
import type { InstallReport } from './install-request';

/**
 * One way an install report may name its link, in the order app-interface.md tries them. A
 * token is carried by its hash only from here on: the token itself is never stored or logged.
 */
export type EvidenceCandidate =
  | { method: 'play_referrer' | 'clipboard'; tokenHash: string }
  /** The link URL the app was opened with: its alias, and the hash of its ls_click if any. */
  | { method: 'opened_url'; alias: string; tokenHash: string | null };

/** The last value of `ls_click` in a query string, if it can be a token. */
function tokenIn(params: URLSearchParams): string | null {
  const token = params.getAll(CLICK_TOKEN_PARAMETER).at(-1);
  return token !== undefined && isClickToken(token) ? token : null;
}

/**
 * The token in a Play install referrer: the `referrer` the link host put on the listing, as the
 * Install Referrer API hands it over (`utm_source=x&ls_click=<token>`). A referrer still
 * percent-encoded as it stood in the store URL (`ls_click%3D<token>`) is read too.
 */
export function tokenFromPlayReferrer(referrer: string): string | null {
  const token = tokenIn(new URLSearchParams(referrer));
  if (token !== null || !referrer.includes('%')) return token;
  try {
    return tokenIn(new URLSearchParams(decodeURIComponent(referrer)));
  } catch {
    return null; // a malformed escape: no token in it
  }
}

function sameHost(a: LinkHost, b: LinkHost): boolean {
  return a.subdomainKey === b.subdomainKey && a.environment === b.environment;
}

/**
 * What an install report offers to match, in order: the Play referrer's token, the clipboard
 * link's token, then the opened link (by itself, with its token if it carries one). A link URL
 * counts only on the caller's own host (its app and environment), as in resolve. Evidence that
 * names nothing is dropped, never an error. An opened URL whose `ls_click` cannot be a token is
 * dropped too: a token it carries must be valid for it to match.
 */
export function evidenceCandidates(
  report: InstallReport,
  host: LinkHost,
  linkDomain: string,
): EvidenceCandidate[] {
  const candidates: EvidenceCandidate[] = [];
  if (report.playReferrer !== undefined) {
    const token = tokenFromPlayReferrer(report.playReferrer);
    if (token !== null)
      candidates.push({ method: 'play_referrer', tokenHash: hashClickToken(token) });
  }
  if (report.clipboardUrl !== undefined) {
    const copied = parseLinkUrl(report.clipboardUrl.trim(), linkDomain);
    const token =
      copied && sameHost(copied.host, host) ? copied.query[CLICK_TOKEN_PARAMETER] : undefined;
    if (token !== undefined && isClickToken(token)) {
      candidates.push({ method: 'clipboard', tokenHash: hashClickToken(token) });
    }
  }
  if (report.openedUrl !== undefined) {
    const opened = parseLinkUrl(report.openedUrl.trim(), linkDomain);
    if (opened && sameHost(opened.host, host)) {
      const token = opened.query[CLICK_TOKEN_PARAMETER] as string | undefined;
      if (token === undefined) {
        candidates.push({ method: 'opened_url', alias: opened.alias, tokenHash: null });
      } else if (isClickToken(token)) {
        candidates.push({
          method: 'opened_url',
          alias: opened.alias,
          tokenHash: hashClickToken(token),
        });
      }
    }
  }
  return candidates;
}
