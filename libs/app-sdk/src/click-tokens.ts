/**
 * Finding a click token (`ls_click`) in what the app holds on its first launch. Pure string work,
 * no `URL` (React Native's is incomplete), so it runs the same everywhere.
 *
 * Privacy: the app should send the server only text that can name a link. A clipboard may hold
 * anything (a password, an address); `isClickTokenUrl` tells your app whether it is one of your
 * link URLs carrying a token before it is sent, and `reportInstall` drops it otherwise.
 */

/** The query parameter the link host adds: `ls_click=<token>`. */
export const CLICK_TOKEN_PARAMETER = 'ls_click';

/** Tokens are base62 (at least 96 random bits), as the gateway reads them; nothing else is one. */
const TOKEN = /^[0-9A-Za-z]{16,64}$/;

/** `scheme://authority/path?query#fragment`, only http(s), no whitespace anywhere. */
const HTTP_URL = /^(https?):\/\/([^/?#\s@]+)(\/[^?#\s]*)?(\?[^#\s]*)?(#\S*)?$/i;

function decode(component: string): string | null {
  try {
    return decodeURIComponent(component.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/** The last valid `ls_click` value of an `a=b&c=d` string, or null. */
function tokenOfPairs(pairs: string): string | null {
  let found: string | null = null;
  for (const pair of pairs.split('&')) {
    const equals = pair.indexOf('=');
    if (equals < 0) continue;
    if (decode(pair.slice(0, equals)) !== CLICK_TOKEN_PARAMETER) continue;
    const value = decode(pair.slice(equals + 1));
    if (value !== null && TOKEN.test(value)) found = value;
  }
  return found;
}

/**
 * The click token of a Play install referrer, as the Play Install Referrer API hands it to the
 * app (`installReferrer`, already decoded once: `ls_click=<token>`, or
 * `utm_source=mail&ls_click=<token>` when the listing had a referrer of its own); null when it
 * carries none (an install that did not come through one of your links). A referrer still
 * encoded as it stood in the store URL (`ls_click%3D<token>`) is read too, as the gateway does.
 */
export function clickTokenFromReferrer(referrer: string | null | undefined): string | null {
  if (!referrer) return null;
  const pairs = referrer.trim();
  const token = tokenOfPairs(pairs);
  if (token !== null || !pairs.includes('%')) return token;
  const decoded = decode(pairs);
  return decoded === null ? null : tokenOfPairs(decoded);
}

/** The host of an http(s) URL, lower case, without port; null for anything else. */
export function hostOfUrl(text: string): string | null {
  const match = HTTP_URL.exec(text.trim());
  if (!match) return null;
  const authority = match[2].toLowerCase();
  const bracket = authority.startsWith('[') ? authority.indexOf(']') + 1 : 0;
  const colon = authority.indexOf(':', bracket);
  return colon < 0 ? authority : authority.slice(0, colon);
}

/** The click token in an http(s) URL's query (`…?ls_click=<token>`), or null. */
export function clickTokenFromUrl(text: string | null | undefined): string | null {
  if (!text) return null;
  const match = HTTP_URL.exec(text.trim());
  const query = match?.[4];
  return query ? tokenOfPairs(query.slice(1)) : null;
}

/**
 * Whether a text (the clipboard's, on iOS) is worth sending as `clipboardUrl`: an http(s) URL
 * with an `ls_click` token in its query and nothing else around it, on one of `linkHosts` when
 * you give them (e.g. `['acme.links.example.com']`; compared without port, case-insensitive).
 */
export function isClickTokenUrl(
  text: string | null | undefined,
  linkHosts?: readonly string[],
): boolean {
  if (!text || clickTokenFromUrl(text) === null) return false;
  if (linkHosts === undefined) return true;
  const host = hostOfUrl(text);
  return host !== null && linkHosts.some((allowed) => allowed.toLowerCase() === host);
}
