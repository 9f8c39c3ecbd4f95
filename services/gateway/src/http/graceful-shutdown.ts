import type { ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';

/**
 * What the app needs to know about a shutdown in progress. server.close() stops accepting and
 * waits for open connections, but a kept-alive connection stays open until its idle timeout
 * after the last response; so once shutdown begins, every response not yet started says
 * `Connection: close` (node then closes the socket after sending it), and /readyz fails.
 */
export class GracefulShutdown {
  private started = false;
  private readonly inFlight = new Set<ServerResponse>();

  get inProgress(): boolean {
    return this.started;
  }

  /** First in the chain: tracks responses until they are sent. */
  middleware(): RequestHandler {
    const inFlight = this.inFlight;
    // One listener shared by every response (`this` is the response): no closure per request.
    function untrack(this: ServerResponse): void {
      inFlight.delete(this);
    }
    return (_req, res, next) => {
      if (this.started) {
        res.shouldKeepAlive = false;
      } else {
        inFlight.add(res);
        res.on('close', untrack);
      }
      next();
    };
  }

  begin(): void {
    this.started = true;
    for (const res of this.inFlight) {
      if (!res.headersSent) res.shouldKeepAlive = false;
    }
    this.inFlight.clear();
  }
}
