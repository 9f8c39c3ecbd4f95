/**
 * Finding a click token (`ls_click`) in what the app holds on its first launch. Pure string work,
 * no `URL` (React Native's is incomplete), so it runs the same everywhere.
 *
 * Privacy: the app should send the server only text that can name one of its links. A clipboard
 * may hold anything (a password, an address) and an app can be opened by any of its universal
 * links (a password-reset link with a secret in it): `isClickTokenUrl` tells your app whether a
 * text is one of your link URLs carrying a token, on one of your link hosts, before it is sent,
 * and `reportInstall` drops anything else.
 *
 * A repeated `ls_click` is read as the gateway reads it: its last value, and no token at all when
 * that value is not one (never an earlier valid value), so the SDK never sends what the gateway
 * would ignore, nor drops what it would match.
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

/**
 * The last `ls_click` value of an `a=b&c=d` string when it is a token; null when it is not (even
 * if an earlier value is one) or there is none. A pair without `=` is a name with an empty value,
 * as the gateway's `URLSearchParams` reads it.
 */
function tokenOfPairs(pairs: string): string | null {
  let last: string | null | undefined;
  for (const pair of pairs.split('&')) {
    const equals = pair.indexOf('=');
    const name = equals < 0 ? pair : pair.slice(0, equals);
    if (decode(name) !== CLICK_TOKEN_PARAMETER) continue;
    last = equals < 0 ? '' : decode(pair.slice(equals + 1));
  }
  return typeof last === 'string' && TOKEN.test(last) ? last : null;
}

/**
 * The click token of a Play install referrer, as the Play Install Referrer API hands it to the
 * app (`installReferrer`, already decoded once: `ls_click=<token>`, or
 * `utm_source=mail&ls_click=<token>` when the listing had a referrer of its own); null when it
 * carries none (an install that did not come through one of your links). A referrer still
 * encoded as it stood in the store URL (`ls_click%3D<token>`) is read too, as the gateway does.
 * A repeated `ls_click` counts by its last value only: `ls_click=<token>&ls_click=x` has none.
 */
export function clickTokenFromReferrer(referrer: string | null | undefined): string | null {
  if (!referrer) return null;
  const pairs = referrer.trim();
  const token = tokenOfPairs(pairs);
  if (token !== null || !pairs.includes('%')) return token;
  const decoded = decode(pairs);
  return decoded === null ? null : tokenOfPairs(decoded);
}

/** The host of an http(s) URL, lower case, without port or a final dot; null for anything else. */
export function hostOfUrl(text: string): string | null {
  const match = HTTP_URL.exec(text.trim());
  if (!match) return null;
  const authority = match[2].toLowerCase();
  const bracket = authority.startsWith('[') ? authority.indexOf(']') + 1 : 0;
  const colon = authority.indexOf(':', bracket);
  const host = colon < 0 ? authority : authority.slice(0, colon);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

/**
 * Whether `text` is an http(s) URL on one of `linkHosts` (host names compared case-insensitively;
 * any port, as the gateway accepts any).
 */
export function isOnLinkHost(text: string, linkHosts: readonly string[]): boolean {
  const host = hostOfUrl(text);
  return host !== null && linkHosts.some((allowed) => allowed.toLowerCase() === host);
}

/**
 * The click token in an http(s) URL's query (`…?ls_click=<token>`), or null; a repeated
 * `ls_click` counts by its last value only.
 */
export function clickTokenFromUrl(text: string | null | undefined): string | null {
  if (!text) return null;
  const match = HTTP_URL.exec(text.trim());
  const query = match?.[4];
  return query ? tokenOfPairs(query.slice(1)) : null;
}

/**
 * Whether a text (the clipboard's, on iOS) is worth sending as `clipboardUrl`: an http(s) URL on
 * one of your `linkHosts` (e.g. `['acme.links.example.com', 'acme-test.links.example.com']`;
 * host names compared case-insensitively, any port) with an `ls_click` token in its query and
 * nothing else around it.
 */
export function isClickTokenUrl(
  text: string | null | undefined,
  linkHosts: readonly string[],
): boolean {
  return !!text && clickTokenFromUrl(text) !== null && isOnLinkHost(text, linkHosts);
}
