import type { ErrorRequestHandler, Response } from 'express';
import type { Logger } from '@linkservice/logger';
import { isDependencyFailure } from './dependency-failure';
import { ApiError, errors } from './errors';

/** body-parser's failures, recognised by their `type`; each one means "nothing was read". */
function bodyParserError(error: unknown): ApiError | undefined {
  const type = (error as { type?: unknown } | null)?.type;
  switch (type) {
    case 'entity.too.large':
      return new ApiError('payload_too_large', 'The request body is larger than 2 MiB.');
    case 'entity.parse.failed':
      return errors.invalidBody('The request body is not valid JSON.');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return errors.invalidBody('The request body must be UTF-8 JSON.');
    case 'request.aborted':
    case 'request.size.invalid':
      return errors.invalidBody('The request body was incomplete.');
    default:
      return undefined;
  }
}

/** express rejects a path whose %-escapes do not decode; no resource has such an id. */
function isUndecodablePath(error: unknown): boolean {
  return error instanceof URIError && (error as { status?: unknown }).status === 400;
}

function send(res: Response, error: ApiError): void {
  res.status(error.status).set(error.headers).json(error.toBody());
}

/**
 * The one error middleware. Known failures keep their slug; Postgres/Redis outages become 503
 * `unavailable`; anything else is logged in full and answered with a bare 500 `internal`, so no
 * stack, SQL or message of an unexpected error ever reaches a client.
 */
export function errorHandler(fallbackLogger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    // Too late for a clean answer: express's final handler destroys the socket.
    if (res.headersSent) {
      next(error);
      return;
    }
    // pino-http's per-request child (carries reqId) when it ran; the app logger otherwise.
    const log = (req.log as Logger | undefined) ?? fallbackLogger;

    if (error instanceof ApiError) {
      if (error.slug === 'unavailable' && error.cause !== undefined) {
        log.warn({ err: error.cause }, 'dependency unavailable');
      }
      send(res, error);
      return;
    }
    const fromBody = bodyParserError(error);
    if (fromBody) {
      send(res, fromBody);
      return;
    }
    if (isUndecodablePath(error)) {
      send(res, errors.notFound());
      return;
    }
    if (isDependencyFailure(error)) {
      log.warn({ err: error }, 'dependency unavailable');
      send(res, errors.unavailable());
      return;
    }
    log.error({ err: error }, 'unhandled error');
    send(res, errors.internal());
  };
}
