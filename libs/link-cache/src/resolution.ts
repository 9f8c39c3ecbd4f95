/** What the link host needs to answer `GET /<alias>`: nothing more is cached. */
export interface LinkResolution {
  linkId: string;
  webFallbackUrl: string;
  iosFallbackUrl: string | null;
  /** Epoch milliseconds; compared with the clock on every request, never baked into the entry. */
  expiresAt: number | null;
  archived: boolean;
  /** The link's title: link previews show it (else the alias). */
  title: string | null;
  /**
   * The app opted in to the iOS "Get the app" page for this environment
   * (`app_associations.ios_deferred_page`; false without a row).
   */
  iosDeferredPage: boolean;
}

/**
 * Until when (epoch ms, exclusive) the link redirects; null: for ever. Archived links keep
 * redirecting whatever their expiry (archived wins, as in the API's status). The cache entry
 * stores this value, so a script reading the entry applies the same rule as `redirectsAt`
 * (`REDIRECTING_LINK_ID_LUA`).
 */
export function redirectsUntil(resolution: LinkResolution): number | null {
  return resolution.archived ? null : resolution.expiresAt;
}

/** True when the link redirects at `now`; false when it is expired (a 410). */
export function redirectsAt(resolution: LinkResolution, now: number): boolean {
  const until = redirectsUntil(resolution);
  return until === null || now < until;
}

/**
 * The rule of `redirectsAt` in Lua, over an encoded entry (`encodeResolution`), for scripts that
 * decide on a cached link inside Redis (the redirect's lookup, which counts the click of a link
 * that redirects): `redirectingLinkId(entry, now)` is the entry's link id when it is a link that
 * redirects at `now` (epoch ms, a number or its text), nil otherwise (an expired link, the
 * negative marker, an entry it cannot read). Only the two leading fields are read, so an entry of
 * an earlier format that leads with them is read too.
 */
export const REDIRECTING_LINK_ID_LUA = `
local function redirectingLinkId(entry, now)
  local untilMs, linkId = string.match(entry, '^(%d*) (%S+) ')
  if linkId and (untilMs == '' or tonumber(now) < tonumber(untilMs)) then return linkId end
  return nil
end`;

/** Stored for an alias that does not exist, so repeated misses do not reach Postgres. */
export const NEGATIVE_ENTRY = '-';

/** The part of an entry only JavaScript reads; the link id and `redirectsUntil` lead the entry. */
interface StoredRest {
  w: string;
  s: string | null;
  e: number | null;
  a: boolean;
  t: string | null;
  d: boolean;
}

const DIGITS = /^\d*$/;

/**
 * `<redirectsUntil> <linkId> <json>`, `redirectsUntil` empty for "for ever". The two leading
 * fields are plain text so a script can apply `redirectsAt` without decoding JSON
 * (`REDIRECTING_LINK_ID_LUA`); a link id never contains a space.
 */
export function encodeResolution(resolution: LinkResolution | null): string {
  if (resolution === null) return NEGATIVE_ENTRY;
  const rest: StoredRest = {
    w: resolution.webFallbackUrl,
    s: resolution.iosFallbackUrl,
    e: resolution.expiresAt,
    a: resolution.archived,
    t: resolution.title,
    d: resolution.iosDeferredPage,
  };
  const until = redirectsUntil(resolution);
  return `${until === null ? '' : String(until)} ${resolution.linkId} ${JSON.stringify(rest)}`;
}

/**
 * `null` for the negative marker; `undefined` for anything unreadable (an entry written by an
 * incompatible version, such as one without `title` and `iosDeferredPage`), which callers treat
 * as a miss.
 */
export function decodeResolution(value: string): LinkResolution | null | undefined {
  if (value === NEGATIVE_ENTRY) return null;
  const first = value.indexOf(' ');
  const second = first === -1 ? -1 : value.indexOf(' ', first + 1);
  if (second <= first + 1 || !DIGITS.test(value.slice(0, first))) return undefined;
  let rest: unknown;
  try {
    rest = JSON.parse(value.slice(second + 1));
  } catch {
    return undefined;
  }
  if (!isStoredRest(rest)) return undefined;
  return {
    linkId: value.slice(first + 1, second),
    webFallbackUrl: rest.w,
    iosFallbackUrl: rest.s,
    expiresAt: rest.e,
    archived: rest.a,
    title: rest.t,
    iosDeferredPage: rest.d,
  };
}

function isStoredRest(value: unknown): value is StoredRest {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.w === 'string' &&
    (v.s === null || typeof v.s === 'string') &&
    (v.e === null || typeof v.e === 'number') &&
    typeof v.a === 'boolean' &&
    // Both arrived with the app interface: an entry written before it lacks them and is
    // unreadable (a miss), so it is refilled from Postgres instead of hiding a deferred page.
    (v.t === null || typeof v.t === 'string') &&
    typeof v.d === 'boolean'
  );
}
