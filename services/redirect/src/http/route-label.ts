import { aliasFromPath } from '@linkservice/contracts';
import { UNMATCHED_ROUTE } from '@linkservice/metrics';
import { associationFileFor } from '../associations/association.service';

/** The route label of every alias: never the alias itself (one series per link). */
export const ALIAS_ROUTE = '/:alias';

/**
 * The `route` label of a request to the link host service, from a closed set: `/:alias`, the two
 * association files' paths on a link host, `/healthz` and `/readyz` on any other host, else
 * `unmatched` (an unknown path, which is never echoed into a label). `path` is requestPath's.
 */
export function redirectRouteLabel(path: string | null, onLinkHost: boolean): string {
  if (path === null) return UNMATCHED_ROUTE;
  if (onLinkHost) {
    if (associationFileFor(path) !== null) return path;
    return aliasFromPath(path) === null ? UNMATCHED_ROUTE : ALIAS_ROUTE;
  }
  return path === '/healthz' || path === '/readyz' ? path : UNMATCHED_ROUTE;
}
