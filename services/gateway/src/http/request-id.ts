import { REQUEST_ID_HEADER, requestIdFrom } from '@linkservice/logger';
import { setSpanAttributes } from '@linkservice/telemetry';
import type { RequestHandler, Response } from 'express';

export { REQUEST_ID_HEADER };

/**
 * First middleware: every response, errors and 404s included, carries X-Request-Id. The header
 * is set before anything else can answer, so it survives every later path through the app.
 */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const id = requestIdFrom(req.headers['x-request-id']);
    res.locals.requestId = id;
    res.setHeader(REQUEST_ID_HEADER, id);
    setSpanAttributes({ 'linkservice.request_id': id });
    next();
  };
}

export function requestIdOf(res: Response): string {
  const id: unknown = res.locals.requestId;
  if (typeof id !== 'string') throw new Error('requestId() middleware did not run');
  return id;
}
