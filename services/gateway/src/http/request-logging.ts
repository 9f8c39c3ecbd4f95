import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { pinoHttp } from 'pino-http';
import type { Logger } from '@linkservice/logger';
import { REQUEST_ID_HEADER } from './request-id';

/**
 * One log line per request, tagged with the request id, with the error in full when the answer
 * was a 500 or 503 (the error middleware puts it on `res.err`). Request headers are never logged (the
 * Authorization header carries the secret key); only method, path and the client address are.
 */
export function requestLogging(logger: Logger): RequestHandler {
  return pinoHttp({
    logger,
    // requestId() ran first and already chose the id.
    genReqId: (_req: IncomingMessage, res: ServerResponse) =>
      String(res.getHeader(REQUEST_ID_HEADER)),
    // Every line of a request carries `reqId`; the final line also has method, path and status.
    quietReqLogger: true,
    customLogLevel: (_req, res, error) => {
      if (error || res.statusCode === 500) return 'error';
      return res.statusCode >= 500 ? 'warn' : 'info';
    },
    serializers: {
      req: (req: { id: unknown; method: string; url: string; remoteAddress?: string }) => ({
        id: req.id,
        method: req.method,
        url: req.url,
        remoteAddress: req.remoteAddress,
      }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
  });
}
