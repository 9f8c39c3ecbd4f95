import type { ErrorRequestHandler } from 'express';
import { isDependencyFailure } from './dependency-failure';
import { ApiError, errors } from './errors';
import { sendError } from './send-json';

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

/**
 * The one error middleware. Known failures keep their slug; Postgres/Redis outages become 503
 * `unavailable`; anything else is answered with a bare 500 `internal`, so no stack, SQL or
 * message of an unexpected error ever reaches a client. The error itself goes, in full, into the
 * request's log line: request-logging.ts logs `res.err` when the response finishes.
 */
export function errorHandler(): ErrorRequestHandler {
  return (error: unknown, _req, res, next) => {
    // Too late for a clean answer: express's final handler destroys the socket.
    if (res.headersSent) {
      next(error);
      return;
    }
    if (error instanceof ApiError) {
      if (error.slug === 'unavailable' && error.cause instanceof Error) res.err = error.cause;
      sendError(res, error);
      return;
    }
    const fromBody = bodyParserError(error);
    if (fromBody) {
      sendError(res, fromBody);
      return;
    }
    res.err = error instanceof Error ? error : new Error(String(error));
    sendError(res, isDependencyFailure(error) ? errors.unavailable() : errors.internal());
  };
}
