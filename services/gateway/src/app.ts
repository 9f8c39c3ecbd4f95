import type { Express } from 'express';
import express from 'express';
import { appsRoutes } from './apps/apps.routes';
import { authenticate, PUBLISHABLE_KEYS, readBearerKey, SECRET_KEYS } from './auth/auth.middleware';
import type { GatewayDeps } from './deps';
import { healthRoutes } from './health/health.routes';
import { errorHandler } from './http/error-handler';
import { requestBudget } from './http/request-budget';
import { requestId } from './http/request-id';
import { requestMetrics } from './http/request-metrics';
import { useRequestLogging } from './http/request-logging';
import type { ApiRoute } from './http/routes';
import { allowedMethods, methodNotAllowed, notFound, routerFor } from './http/routes';
import { buildOpenApiDocument, documentText, OPENAPI_PATH } from './openapi/document';
import { serveOpenApiDocument } from './openapi/openapi.routes';
import { creationRoutes } from './creation/creation.routes';
import { linksRoutes } from './links/links.routes';
import { analyticsRoutes } from './analytics/analytics.routes';
import { qrRoutes } from './qr/qr.routes';
import { webhooksRoutes } from './webhooks/webhooks.routes';
import { installsRoutes } from './sdk/installs.routes';
import { jwksRoutes } from './sdk/jwks.routes';
import { resolveRoutes } from './sdk/resolve.routes';
import { noStore, sdkAbuseLimit, sdkCors } from './sdk/sdk.middleware';

export const API_BASE_PATH = '/api/v1';

/** The app interface (app-interface.md): publishable keys only, mounted before the API. */
export const SDK_BASE_PATH = `${API_BASE_PATH}/sdk`;

/**
 * THE registration point for /api/v1 endpoints: add one line per feature module. Everything
 * listed here is mounted behind authentication, gets 404/405 handling and JSON body parsing, and
 * is walked by the shared auth test (auth/api-routes.auth.integration.test.ts).
 */
export function apiRoutes(deps: GatewayDeps): ApiRoute[] {
  return [
    ...appsRoutes(deps),
    ...creationRoutes(deps),
    // After creationRoutes, so /links/batch is its own path (405 for GET) and not a link id.
    ...linksRoutes(deps),
    ...qrRoutes(deps),
    ...analyticsRoutes(deps),
    ...webhooksRoutes(deps),
  ];
}

/**
 * THE registration point for /api/v1/sdk endpoints (publishable keys), as apiRoutes() is for
 * secret keys: mounted behind the publishable-key check, the abuse limit, CORS and `no-store`,
 * and walked by the same shared auth test.
 */
export function sdkRoutes(deps: GatewayDeps): ApiRoute[] {
  return [...resolveRoutes(deps), ...installsRoutes(deps)];
}

export interface AppOptions {
  /** The /api/v1 routes to mount; apiRoutes(deps) unless a test adds its own. */
  routes?: readonly ApiRoute[];
  /**
   * True once SIGTERM arrived: /readyz then fails so traffic drains away. (Ending keep-alive is
   * the server's: startHttpService.)
   */
  isShuttingDown?: () => boolean;
}

/**
 * Order matters: request id (so every answer carries it), the request's Postgres budget, request
 * log, the API document (public, so before both keyed routers), then /api/v1/sdk and
 * /api/v1: every request is authenticated before anything about its path is answered (route,
 * 405 or 404), so an unauthenticated caller learns nothing about which paths exist. The SDK
 * comes first and ends in its own 404, so none of its paths reaches the secret-key API (whose
 * 401 would name the other kind of key). Then the probes and the receipts' JWKS (no auth; after
 * the API, so API requests never walk their router), then 404, then the one error middleware.
 */
export function createApp(deps: GatewayDeps, options: AppOptions = {}): Express {
  const isShuttingDown = options.isShuttingDown ?? (() => false);
  const app = express();
  app.disable('x-powered-by');
  // Clients branch on status codes; a conditional 304 on a link read would only surprise them.
  app.disable('etag');
  app.enable('case sensitive routing');
  app.set('trust proxy', deps.config.TRUST_PROXY);

  app.use(requestMetrics(deps.metrics, SDK_BASE_PATH));
  app.use(requestId());
  app.use(requestBudget(deps.config.API_REQUEST_BUDGET_MS));
  useRequestLogging(app, deps.logger);
  // Public, so outside both keyed routers (each authenticates every request it sees). Built from
  // the lists mounted below (a test's extra routes are not part of the contract).
  // Public, so outside both keyed routers (each authenticates every request it sees). Built from
  // the lists mounted below (a test's extra routes are not part of the contract). Another method
  // is a 405 with Allow, as on every API path.
  const openApiPath = `${API_BASE_PATH}${OPENAPI_PATH}`;
  app.get(
    openApiPath,
    serveOpenApiDocument(() =>
      documentText(buildOpenApiDocument({ api: apiRoutes(deps), sdk: sdkRoutes(deps) })),
    ),
  );
  app.all(openApiPath, methodNotAllowed(allowedMethods(['GET'])));
  app.use(
    SDK_BASE_PATH,
    noStore(),
    // Preflights are answered here, without a key: browsers send them without Authorization.
    sdkCors(),
    routerFor(sdkRoutes(deps), {
      before: [readBearerKey(PUBLISHABLE_KEYS), sdkAbuseLimit(deps.sdkLimiter)],
      authenticate: authenticate(deps.keys),
    }),
    notFound(),
  );
  app.use(
    API_BASE_PATH,
    routerFor(options.routes ?? apiRoutes(deps), {
      before: readBearerKey(SECRET_KEYS),
      authenticate: authenticate(deps.keys),
    }),
  );
  app.use(routerFor([...healthRoutes(deps, isShuttingDown), ...jwksRoutes(deps)]));
  app.use(notFound());
  app.use(errorHandler());
  return app;
}
