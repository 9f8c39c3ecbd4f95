import { randomUUID } from 'node:crypto';
import type { RequestHandler, Response } from 'express';

export const REQUEST_ID_HEADER = 'X-Request-Id';

/** A caller's id is echoed only when it is short and harmless in logs and headers. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * First middleware: every response, errors and 404s included, carries X-Request-Id. The header
 * is set before anything else can answer, so it survives every later path through the app.
 */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const offered = req.get(REQUEST_ID_HEADER);
    const id = offered !== undefined && SANE_REQUEST_ID.test(offered) ? offered : randomUUID();
    res.locals.requestId = id;
    res.setHeader(REQUEST_ID_HEADER, id);
    next();
  };
}

export function requestIdOf(res: Response): string {
  const id: unknown = res.locals.requestId;
  if (typeof id !== 'string') throw new Error('requestId() middleware did not run');
  return id;
}
