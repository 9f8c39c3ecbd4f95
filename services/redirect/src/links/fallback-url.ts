import { CLICK_TOKEN_PARAMETER } from '@linkservice/link-cache';

/**
 * Rules that rewrite the fallback URL a redirect goes to. Both work on the URL's text and leave
 * every byte they do not add as it was: a fallback is sent exactly as stored (or in its escaped
 * form, see headerSafeUrl), and a query exactly as the person's client sent it.
 */

function splitFragment(url: string): { base: string; fragment: string } {
  const hash = url.indexOf('#');
  return hash === -1
    ? { base: url, fragment: '' }
    : { base: url.slice(0, hash), fragment: url.slice(hash) };
}

/** `url` with `pairs` added to its query: `?` when it has none, else `&` unless the query is empty or already ends with one. */
function appendToQuery(base: string, pairs: string): string {
  const mark = base.indexOf('?');
  if (mark === -1) return `${base}?${pairs}`;
  return mark === base.length - 1 || base.endsWith('&') ? `${base}${pairs}` : `${base}&${pairs}`;
}

/**
 * Query passthrough (app-interface.md): the tapped URL's raw query (as sent, without `?`) after
 * the fallback's own query, before the fallback's fragment, which is kept. Nothing is decoded,
 * re-encoded or merged: a name in both appears twice. An empty query (none, or `?` alone) adds
 * nothing; a fallback whose query is empty (`…?`) or ends with `&` gets no second separator.
 */
export function withPassthroughQuery(fallback: string, query: string): string {
  if (query === '') return fallback;
  const { base, fragment } = splitFragment(fallback);
  return `${appendToQuery(base, query)}${fragment}`;
}

const PLAY_PREFIX = /^https:\/\/play\.google\.com[:/]/i;

/**
 * A Play Store listing: `https://play.google.com/store/apps/details` with a non-empty `id`
 * (host in any case, `:443` allowed). The cheap prefix test spares every other redirect the
 * URL parser.
 */
export function isPlayStoreListing(url: string): boolean {
  if (!PLAY_PREFIX.test(url)) return false;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  return (
    parsed.hostname === 'play.google.com' &&
    parsed.port === '' &&
    parsed.pathname === '/store/apps/details' &&
    (parsed.searchParams.get('id') ?? '') !== ''
  );
}

/**
 * A Play Store listing with the click token in its install referrer, which Play hands to the app
 * after the install (app-interface.md): `referrer=ls_click%3D<token>` added, or
 * `%26ls_click%3D<token>` appended to the `referrer` value already there (an empty one just
 * becomes `ls_click%3D<token>`). Any other URL is returned unchanged.
 *
 * Several `referrer` pairs (the fallback's own and one from query passthrough, or two sent by the
 * client): each gets the token. Google does not say which of several Play hands to the app, so
 * the token is in whichever it picks; the values are otherwise kept, none is dropped. Ours is
 * always the value's last `ls_click`, so an app reading the referrer takes the last one.
 */
export function withPlayReferrerToken(url: string, token: string): string {
  if (!isPlayStoreListing(url)) return url;
  const tokenPair = `${CLICK_TOKEN_PARAMETER}%3D${token}`;
  const { base, fragment } = splitFragment(url);
  const mark = base.indexOf('?');
  const pairs = base.slice(mark + 1).split('&');
  let found = false;
  for (const [index, pair] of pairs.entries()) {
    const equals = pair.indexOf('=');
    if ((equals === -1 ? pair : pair.slice(0, equals)) !== 'referrer') continue;
    found = true;
    const value = equals === -1 ? '' : pair.slice(equals + 1);
    pairs[index] = value === '' ? `referrer=${tokenPair}` : `${pair}%26${tokenPair}`;
  }
  const withToken = found
    ? `${base.slice(0, mark + 1)}${pairs.join('&')}`
    : appendToQuery(base, `referrer=${tokenPair}`);
  return `${withToken}${fragment}`;
}
