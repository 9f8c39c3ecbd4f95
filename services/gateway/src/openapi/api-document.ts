import { apiRoutes, sdkRoutes } from '../app';
import type { GatewayDeps } from '../deps';
import type { OpenApiDocument } from './document';
import { buildOpenApiDocument } from './document';

/**
 * Deps for listing routes without connecting anything: route functions only keep what they take
 * in closures for their handlers, so building the lists touches no member. Any call (a route
 * function that started doing work while building) fails loudly instead of reaching a database.
 */
export function listingOnlyDeps(): GatewayDeps {
  const unusable: object = new Proxy(function unusable() {}, {
    get: (_target, name) => (name === 'then' ? undefined : unusable),
    apply: () => {
      throw new Error('listingOnlyDeps: a route function used its deps while being listed');
    },
    construct: () => {
      throw new Error('listingOnlyDeps: a route function used its deps while being listed');
    },
  });
  return unusable as GatewayDeps;
}

/** The API document of the routes app.ts mounts, built without live deps (script and tests). */
export function apiDocument(): OpenApiDocument {
  const deps = listingOnlyDeps();
  return buildOpenApiDocument({ api: apiRoutes(deps), sdk: sdkRoutes(deps) });
}
