/** The path of an origin-form request target, query dropped; null for any other form. */
export function requestPath(url: string | undefined): string | null {
  if (!url?.startsWith('/')) return null;
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}
