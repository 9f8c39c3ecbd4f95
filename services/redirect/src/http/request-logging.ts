import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@linkservice/logger';
import { requestHost } from './host';
import { requestPath } from './request-target';

/**
 * At debug, one line per request once it is done: method, host, path (the alias), status and
 * duration. Never the query (it may carry an ls_click token or the caller's data) nor any other
 * header. Off at info and above: then this costs one level check per request.
 */
export function logRequestAtDebug(
  logger: Logger,
  trustForwardedHost: boolean,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
): void {
  if (!logger.isLevelEnabled('debug')) return;
  const startedAt = performance.now();
  res.once('close', () => {
    logger.debug(
      {
        reqId: requestId,
        method: req.method,
        host: requestHost(req.headers, trustForwardedHost),
        path: requestPath(req.url),
        status: res.statusCode,
        durationMs: Math.round((performance.now() - startedAt) * 10) / 10,
        ...(!res.writableFinished && { aborted: true }),
      },
      'request completed',
    );
  });
}
