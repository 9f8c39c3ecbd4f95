/** Letters, digits, `-` and `_`, starting with a letter or digit, at most 128 characters. */
const ALIAS = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** The path of an origin-form request target, query dropped; null for any other form. */
export function requestPath(url: string | undefined): string | null {
  if (!url?.startsWith('/')) return null;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/**
 * The alias a path names, or null when it cannot name one (which answers 404 without a lookup).
 * Exactly one segment: `/Promo` is `Promo`, `/Promo/` and `/a/b` name nothing. Percent-escapes
 * are decoded first (RFC 3986 treats `%41` and `A` as the same unreserved character), then the
 * result must be a valid alias, so an escaped `/`, `.` or anything else still names nothing.
 * Case is kept: aliases are case-sensitive.
 */
export function aliasFromPath(path: string): string | null {
  let segment = path.slice(1);
  if (segment.includes('%')) {
    try {
      segment = decodeURIComponent(segment);
    } catch {
      return null; // malformed escape
    }
  }
  return ALIAS.test(segment) ? segment : null;
}
