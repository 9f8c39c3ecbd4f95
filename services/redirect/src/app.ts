import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { CLICK_TOKEN_PARAMETER } from '@linkservice/link-cache';
import { pingDatabase } from '@linkservice/db';
import { createProbes } from '@linkservice/lifecycle';
import { REQUEST_ID_HEADER, requestIdFrom } from '@linkservice/logger';
import { methodLabel, secondsSince } from '@linkservice/metrics';
import { setHttpRoute } from '@linkservice/telemetry';
import { associationDocument, associationFileFor } from './associations/association.service';
import type { RedirectDeps } from './deps';
import type { LinkHost } from '@linkservice/contracts';
import { aliasFromPath, linkUrlFor, parseLinkHost } from '@linkservice/contracts';
import { clientAddress, requestHost } from './http/host';
import { requestPath, requestQuery } from './http/request-target';
import { logRequestAtDebug } from './http/request-logging';
import { redirectRouteLabel } from './http/route-label';
import { PAGES, sendJsonDocument, sendPage, sendRedirect } from './http/responses';
import { CLICK_TOKEN_LENGTH } from './clicks/click-token-minter';
import { DEFERRED_PAGE_HEADERS, renderDeferredPage } from './pages/deferred-page';
import { PREVIEW_PAGE_HEADERS, renderPreviewPage } from './pages/preview-page';
import { throttled } from './throttled';

export interface AppOptions {
  /** True once SIGTERM arrived: /readyz then fails so traffic drains away. */
  isShuttingDown(): boolean;
}

const ALLOW = { Allow: 'GET, HEAD' };
const RETRY_SOON = { 'Retry-After': '5' };
/**
 * A HEAD of the deferred page mints no token, yet answers with the GET's headers: its page (whose
 * body node:http drops) is rendered with this stand-in of a token's length, so Content-Length is
 * the same.
 */
const HEAD_TOKEN_STAND_IN = '0'.repeat(CLICK_TOKEN_LENGTH);

/**
 * The link host, on plain node:http (the hottest path of the system). Requests for a link host
 * (`<key>.<domain>`, `<key>-test.<domain>`) resolve aliases and serve the app association files;
 * requests for any other host (probes, which address the pod) only get /healthz and /readyz.
 * So a probe path never shadows an alias, and link hosts never expose readiness.
 */
export function createApp(deps: RedirectDeps, options: AppOptions): RequestListener {
  const { config, logger } = deps;
  const warnUnavailable = throttled(10_000, (error: unknown) => {
    logger.error({ err: error }, 'cannot resolve links: dependency unavailable');
  });
  const probes = createProbes({
    probes: { postgres: () => pingDatabase(deps.db), redis: () => deps.redis.ping() },
    isShuttingDown: () => options.isShuttingDown(),
    logger,
  });

  async function handle(
    req: IncomingMessage,
    res: ServerResponse,
    path: string | null,
    host: LinkHost | null,
  ): Promise<void> {
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') {
      sendPage(res, 405, PAGES.methodNotAllowed, ALLOW);
      return;
    }
    if (path === null) {
      sendPage(res, 404, PAGES.notFound);
    } else if (host) {
      await serveLinkHost(req, res, host, path, method === 'GET');
    } else {
      await serveProbe(req, res, path);
    }
  }

  /** What a click's analytics are derived from; read once, never kept. */
  function clickClientOf(req: IncomingMessage) {
    const referrer = req.headers.referer;
    const country = config.GEO_COUNTRY_HEADER ? req.headers[config.GEO_COUNTRY_HEADER] : undefined;
    return {
      address: clientAddress(req, config.TRUST_FORWARDED_FOR),
      referrer,
      countryHeader: Array.isArray(country) ? country[0] : country,
    };
  }

  async function serveLinkHost(
    req: IncomingMessage,
    res: ServerResponse,
    host: LinkHost,
    path: string,
    isGet: boolean,
  ): Promise<void> {
    const alias = aliasFromPath(path);
    if (alias === null) {
      const file = associationFileFor(path);
      if (file === null) {
        sendPage(res, 404, PAGES.notFound);
        return;
      }
      // The server span is named by its route: a fixed path here, `/:alias` below.
      setHttpRoute(path);
      const document = await associationDocument(deps.associations, host, file);
      if (document === null) sendPage(res, 404, PAGES.notFound);
      else sendJsonDocument(res, 200, document);
      return;
    }

    setHttpRoute('/:alias');
    let outcome;
    try {
      outcome = await deps.redirects.outcome({
        ref: { subdomainKey: host.subdomainKey, environment: host.environment, alias },
        userAgent: req.headers['user-agent'],
        query: requestQuery(req.url),
        isGet,
        client: clickClientOf(req),
      });
    } catch (error) {
      warnUnavailable(error);
      sendPage(res, 503, PAGES.unavailable, RETRY_SOON);
      return;
    }
    deps.metrics.redirected(outcome.kind);
    // The click (of a GET) is already counted, so one the client saw survives a shutdown.
    switch (outcome.kind) {
      case 'not_found':
        sendPage(res, 404, PAGES.notFound);
        return;
      case 'expired':
        sendPage(res, 410, PAGES.expired);
        return;
      case 'redirect':
        sendRedirect(res, outcome.location);
        return;
      case 'preview': {
        const page = renderPreviewPage({
          // The link's title, else its alias (an empty title is no title).
          title: outcome.title === null || outcome.title === '' ? alias : outcome.title,
          linkUrl: linkUrlFor(host.subdomainKey, host.environment, alias, config.LINK_DOMAIN),
        });
        sendPage(res, 200, page, PREVIEW_PAGE_HEADERS);
        return;
      }
      case 'deferred_page': {
        const linkUrl = linkUrlFor(host.subdomainKey, host.environment, alias, config.LINK_DOMAIN);
        const page = renderDeferredPage({
          title: outcome.title,
          fallbackUrl: outcome.fallback,
          copyUrl: `${linkUrl}?${CLICK_TOKEN_PARAMETER}=${outcome.clickToken ?? HEAD_TOKEN_STAND_IN}`,
        });
        sendPage(res, 200, page, DEFERRED_PAGE_HEADERS);
        return;
      }
    }
  }

  async function serveProbe(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
  ): Promise<void> {
    if (path === '/healthz') await probes.healthz(req, res);
    else if (path === '/readyz') await probes.readyz(req, res);
    else sendPage(res, 404, PAGES.notFound);
  }

  return (req, res) => {
    const started = process.hrtime.bigint();
    // Every answer carries it (writeHead merges it in), so a failure can be found in the log.
    const requestId = requestIdFrom(req.headers['x-request-id']);
    res.setHeader(REQUEST_ID_HEADER, requestId);
    logRequestAtDebug(logger, config.TRUST_FORWARDED_HOST, req, res, requestId);
    const path = requestPath(req.url);
    const host = parseLinkHost(
      requestHost(req.headers, config.TRUST_FORWARDED_HOST),
      config.LINK_DOMAIN,
    );
    // Every page is written before handle() settles: the status is final then.
    const observe = (): void => {
      deps.metrics.http.observe(
        redirectRouteLabel(path, host !== null),
        methodLabel(req.method),
        res.statusCode,
        secondsSince(started),
      );
    };
    handle(req, res, path, host).then(observe, (error: unknown) => {
      // The path only: the query may carry an ls_click token or the caller's data.
      logger.error({ err: error, requestId, method: req.method, path }, 'request failed');
      if (!res.headersSent) sendPage(res, 500, PAGES.internal);
      else res.destroy();
      observe();
    });
  };
}
