import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { pingDatabase } from '@linkservice/db';
import { createProbes } from '@linkservice/lifecycle';
import { REQUEST_ID_HEADER, requestIdFrom } from '@linkservice/logger';
import { associationDocument, associationFileFor } from './associations/association.service';
import type { RedirectDeps } from './deps';
import type { LinkHost } from '@linkservice/contracts';
import { aliasFromPath, parseLinkHost } from '@linkservice/contracts';
import { requestHost } from './http/host';
import { requestPath } from './http/request-target';
import { PAGES, sendJson, sendPage, sendRedirect } from './http/responses';
import { throttled } from './throttled';

export interface AppOptions {
  /** True once SIGTERM arrived: /readyz then fails so traffic drains away. */
  isShuttingDown(): boolean;
}

const ALLOW = { Allow: 'GET, HEAD' };
const RETRY_SOON = { 'Retry-After': '5' };

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

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') {
      sendPage(res, 405, PAGES.methodNotAllowed, ALLOW);
      return;
    }
    const path = requestPath(req.url);
    const host = parseLinkHost(
      requestHost(req.headers, config.TRUST_FORWARDED_HOST),
      config.LINK_DOMAIN,
    );
    if (path === null) {
      sendPage(res, 404, PAGES.notFound);
    } else if (host) {
      await serveLinkHost(req, res, host, path, method === 'GET');
    } else {
      await serveProbe(req, res, path);
    }
  }

  async function serveLinkHost(
    req: IncomingMessage,
    res: ServerResponse,
    host: LinkHost,
    path: string,
    countsClick: boolean,
  ): Promise<void> {
    const alias = aliasFromPath(path);
    if (alias === null) {
      const file = associationFileFor(path);
      if (file === null) {
        sendPage(res, 404, PAGES.notFound);
        return;
      }
      const document = await associationDocument(deps.db, host, file);
      if (document === null) sendPage(res, 404, PAGES.notFound);
      else sendJson(res, 200, document);
      return;
    }

    let outcome;
    try {
      outcome = await deps.redirects.outcome(
        { subdomainKey: host.subdomainKey, environment: host.environment, alias },
        req.headers['user-agent'],
        countsClick,
      );
    } catch (error) {
      warnUnavailable(error);
      sendPage(res, 503, PAGES.unavailable, RETRY_SOON);
      return;
    }
    switch (outcome.kind) {
      case 'not_found':
        sendPage(res, 404, PAGES.notFound);
        return;
      case 'expired':
        sendPage(res, 410, PAGES.expired);
        return;
      case 'redirect':
        // The click (of a GET) is already counted, so one the client saw survives a shutdown.
        sendRedirect(res, outcome.location);
        return;
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
    // Every answer carries it (writeHead merges it in), so a failure can be found in the log.
    const requestId = requestIdFrom(req.headers['x-request-id']);
    res.setHeader(REQUEST_ID_HEADER, requestId);
    handle(req, res).catch((error: unknown) => {
      logger.error({ err: error, requestId, method: req.method, url: req.url }, 'request failed');
      if (!res.headersSent) sendPage(res, 500, PAGES.internal);
      else res.destroy();
    });
  };
}
