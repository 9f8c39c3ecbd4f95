import type { Express, Request, RequestHandler, Response } from 'express';
import type { Level, Logger } from '@linkservice/logger';
import { redactUrl } from '@linkservice/telemetry';
import { requestIdOf } from './request-id';

declare module 'http' {
  interface IncomingMessage {
    /** This request's logger: every line carries `reqId`. Created on first use. */
    readonly log: Logger;
  }
  interface ServerResponse {
    /** The failure behind a 500/503, set by the error middleware; logged in full on the request line. */
    err?: Error;
  }
}

const STARTED_AT = Symbol('startedAt');

/** Probes poll every few seconds: their lines are debug unless the answer is a failure. */
const PROBE_PATHS = new Set(['/healthz', '/readyz']);

/** The creation job this request submitted, named on its log line (`jobId`). */
export function setJobIdOf(res: Response, jobId: string): void {
  res.locals.jobId = jobId;
}

function jobIdOf(res: Response): string | undefined {
  const jobId: unknown = res.locals.jobId;
  return typeof jobId === 'string' ? jobId : undefined;
}

type TimedResponse = Response & { [STARTED_AT]?: number };

/**
 * 500 is a bug (error); 503 and other 5xx are outages or refusals to answer (warn); a probe that
 * answered is debug.
 */
function levelOf(res: Response): Level {
  if (res.statusCode === 500) return 'error';
  if (res.statusCode >= 500) return 'warn';
  return PROBE_PATHS.has(res.req.path) ? 'debug' : 'info';
}

/**
 * One log line per request, written when the response is done, tagged with the request id, with
 * the error in full when the answer was a 500 or 503 (the error middleware puts it on `res.err`).
 * Request headers are never logged (the Authorization header carries the secret key, and
 * X-Install-Secret an installation's); only method, path (install ids redacted) and the client
 * address are.
 *
 * Per request this costs one timestamp and two listeners: the line, its child logger and its
 * serialised fields are built only when the line's level is enabled (at `warn`, only for 5xx),
 * and `req.log` makes its child logger only for a handler that logs.
 */
export function useRequestLogging(app: Express, logger: Logger): void {
  function logLine(res: TimedResponse, failure: Error | undefined): void {
    const error = failure ?? res.err;
    const level = failure ? 'error' : levelOf(res);
    if (!logger.isLevelEnabled(level)) return;
    const req = res.req;
    const id = requestIdOf(res);
    const jobId = jobIdOf(res);
    const line = {
      reqId: id,
      ...(jobId !== undefined && { jobId }),
      req: {
        id,
        method: req.method,
        // An install's id never reaches a log line (app-interface.md).
        url: redactUrl(req.originalUrl),
        // req.ip: the client as TRUST_PROXY says (the peer unless a trusted proxy names one),
        // the same address the SDK abuse limit charges.
        remoteAddress: req.ip,
      },
      res: { statusCode: res.statusCode },
      responseTime: Date.now() - (res[STARTED_AT] ?? Date.now()),
      ...(error !== undefined && { err: error }),
    };
    const message = !res.writableFinished
      ? 'request aborted'
      : error !== undefined || res.statusCode >= 500
        ? 'request errored'
        : 'request completed';
    logger[level](line, message);
  }

  // `this` is the response: shared listeners, so no closure is allocated per request.
  function onClose(this: TimedResponse): void {
    this.removeListener('error', onError);
    logLine(this, undefined);
  }
  function onError(this: TimedResponse, error: Error): void {
    this.removeListener('close', onClose);
    logLine(this, error);
  }

  // Defined once on the app's request prototype rather than per request: most handlers never log.
  Object.defineProperty(app.request, 'log', {
    configurable: true,
    get(this: Request): Logger {
      const log = this.res ? logger.child({ reqId: requestIdOf(this.res) }) : logger;
      Object.defineProperty(this, 'log', { value: log });
      return log;
    },
  });

  const middleware: RequestHandler = (_req, res: TimedResponse, next) => {
    res[STARTED_AT] = Date.now();
    res.on('close', onClose);
    res.on('error', onError);
    next();
  };
  app.use(middleware);
}
