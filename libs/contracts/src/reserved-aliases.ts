/**
 * Words no link may use as its alias, because the link host or people reading the URL would take
 * them for a page of the service itself. Compared case-insensitively: `Admin` is as reserved as
 * `admin`. The alias generator must skip them too (several are 7+ alphanumerics, e.g. `healthz`).
 */
export const RESERVED_ALIASES: ReadonlySet<string> = new Set([
  'api',
  'app',
  'apps',
  'admin',
  'assets',
  'static',
  'health',
  'healthz',
  'readyz',
  'metrics',
  'robots',
  'well-known',
  'apple-app-site-association',
  'assetlinks',
  'login',
  'logout',
  'signup',
  'settings',
  'help',
  'support',
  'www',
  'links',
  'link',
  'new',
  'edit',
  'archive',
  'expired',
  'not-found',
  '404',
  '500',
]);

export function isReservedAlias(alias: string): boolean {
  return RESERVED_ALIASES.has(alias.toLowerCase());
}
