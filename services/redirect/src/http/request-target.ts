/** The path of an origin-form request target, query dropped; null for any other form. */
export function requestPath(url: string | undefined): string | null {
  if (!url?.startsWith('/')) return null;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/**
 * The raw query of a request target, exactly as sent, without `?`: empty when there is none (or
 * just `?`). A fragment is never part of it (clients do not send one, but Node's parser lets `#`
 * through). Node's parser refuses bytes outside printable ASCII, so what is left can go into a
 * Location header unchanged.
 */
export function requestQuery(url: string | undefined): string {
  if (url === undefined) return '';
  const hash = url.indexOf('#');
  const target = hash === -1 ? url : url.slice(0, hash);
  const mark = target.indexOf('?');
  return mark === -1 ? '' : target.slice(mark + 1);
}
