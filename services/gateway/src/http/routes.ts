import type { Request, RequestHandler, Router } from 'express';
import express from 'express';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import { ApiError, errors } from './errors';
import { jsonBody } from './json-body';
import { labelRoute } from './route-label';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The express route method that mounts each HTTP method's handlers. */
const ROUTE_METHOD = {
  GET: 'get',
  POST: 'post',
  PUT: 'put',
  PATCH: 'patch',
  DELETE: 'delete',
} as const satisfies Record<HttpMethod, string>;

/**
 * One endpoint. Feature modules export a function `(deps) => ApiRoute[]`, and app.ts lists those
 * in `apiRoutes` (secret keys) or `sdkRoutes` (publishable keys): each list is both what gets
 * mounted and what the shared auth test walks, so a new route is authenticated, 404/405-aware
 * and covered by that test without further wiring.
 */
export interface ApiRoute {
  method: HttpMethod;
  /** express path, relative to the router it is mounted on, e.g. `/links/:linkId`. */
  path: string;
  handler: RequestHandler;
  /**
   * Authenticates this route's requests itself, in place of the router's `authenticate`, while
   * loading what the handler needs: one database round trip instead of two on a hot read. Build
   * it with combinedLoad() (auth/auth.middleware.ts); its outcome for the key is authenticate()'s.
   * It may read the body itself (readJsonBody); jsonBody() then answers what that read found.
   */
  authenticatedLoad?: RequestHandler;
  /**
   * A POST that takes no input (an action such as rotating a secret): the request may come
   * without a body. One that is sent is read by the same rules as any other.
   */
  bodyOptional?: boolean;
  /**
   * The operation as the API document (openapi/document.ts) shows it: operationId, summary,
   * parameters, body and every answer by status. Each module keeps these in its `*.openapi.ts`.
   * Optional only so tests can mount routes of their own: building the document from apiRoutes()
   * or sdkRoutes() fails on a route without it, and the document's tests build it.
   */
  openapi?: ZodOpenApiOperationObject;
}

/** HEAD is answered by every GET handler (express does that), so Allow lists it with GET. */
export function allowedMethods(methods: Iterable<HttpMethod>): string[] {
  const allowed = new Set<string>(methods);
  if (allowed.has('GET')) allowed.add('HEAD');
  return [...allowed].sort();
}

/** Answers 405 with Allow: every method a path does not have (and a public path's others). */
export function methodNotAllowed(allow: string[]): RequestHandler {
  const header = allow.join(', ');
  return (req, _res, next) => {
    next(
      new ApiError('method_not_allowed', `${req.method} is not allowed here; use ${header}.`, {
        headers: { Allow: header },
      }),
    );
  };
}

export interface RouterOptions {
  /**
   * Runs first for every request the router sees, matched or not (e.g. reading the API key,
   * then beginning the SDK's abuse limit beside its lookup).
   */
  before?: RequestHandler | RequestHandler[];
  /**
   * Runs for every request the router sees unless its route has an `authenticatedLoad`: before
   * the route's body handling and handler, before a 405, and before an unknown path falls
   * through to 404 (e.g. looking the API key up). It must tolerate running twice for a request
   * a handler passes on with next().
   */
  authenticate?: RequestHandler;
}

/** A path segment as written when its %-escapes do not decode, so that it decodes to itself. */
function decodableSegment(segment: string): string {
  try {
    decodeURIComponent(segment);
    return segment;
  } catch {
    return encodeURIComponent(segment);
  }
}

/**
 * Takes a path segment whose %-escapes do not decode (`/links/%ZZ`) as written: its parameter
 * is then the text `%ZZ`, which names nothing. Left alone, express refuses such a path while it
 * matches routes, before anything authenticates the request: an unknown key would learn which
 * paths exist, and a route could not answer its own 404. This way the key is checked first and
 * the route answers exactly as for an unknown id.
 */
export function undecodableSegmentsAsWritten(): RequestHandler {
  return (req, _res, next) => {
    const queryAt = req.url.indexOf('?');
    const path = queryAt === -1 ? req.url : req.url.slice(0, queryAt);
    if (path.includes('%')) {
      const written = path.split('/').map(decodableSegment).join('/');
      if (written !== path) req.url = `${written}${req.url.slice(path.length)}`;
    }
    next();
  };
}

/**
 * Mounts routes grouped by path: each method gets authentication, JSON body handling, then its
 * handler; every other method on a known path is authenticated, then 405 with Allow. Unknown
 * paths are authenticated, then fall through to notFound(). `before` sits inside the router
 * rather than as its own mount: one layer less per request. Authentication runs per route
 * rather than in `before` so a route can declare its own (`authenticatedLoad`).
 */
export function routerFor(routes: readonly ApiRoute[], options: RouterOptions = {}): Router {
  const router = express.Router({ caseSensitive: true });
  const { before, authenticate } = options;
  router.use(undecodableSegmentsAsWritten());
  if (before) router.use(before);
  const byPath = new Map<string, ApiRoute[]>();
  for (const route of routes) {
    const group = byPath.get(route.path) ?? [];
    if (group.some((other) => other.method === route.method)) {
      throw new Error(`Route ${route.method} ${route.path} is registered twice`);
    }
    group.push(route);
    byPath.set(route.path, group);
  }
  for (const [path, group] of byPath) {
    const route = router.route(path);
    route.all(labelRoute(path));
    for (const { method, handler, authenticatedLoad, bodyOptional } of group) {
      const authentication = authenticatedLoad ?? authenticate;
      const body = jsonBody({ optional: bodyOptional });
      const handlers = authentication ? [authentication, body, handler] : [body, handler];
      route[ROUTE_METHOD[method]](handlers);
    }
    const refuse = methodNotAllowed(allowedMethods(group.map((r) => r.method)));
    route.all(authenticate ? [authenticate, refuse] : refuse);
  }
  if (authenticate) router.use(authenticate);
  return router;
}

/** A `:name` segment of the matched path (express types allow arrays for wildcards). */
export function pathParam(req: Request, name: string): string {
  const value: unknown = req.params[name];
  if (typeof value !== 'string') throw new Error(`the route has no :${name} parameter`);
  return value;
}

/**
 * Last before the error middleware (or of a mounted API): nothing matched the path. It names the
 * path as the client sent it (undecodableSegmentsAsWritten may have escaped a segment since).
 */
export function notFound(): RequestHandler {
  return (req, _res, next) => {
    const [path] = req.originalUrl.split('?', 1);
    next(errors.notFound(`No route for ${req.method} ${path}.`));
  };
}
