import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';

/**
 * How long a connection kept alive when the drain begins may still bring one more request (which
 * is answered with `Connection: close`) before it is closed. Closing it at once races the client:
 * a busy keep-alive client writes its next request the moment the previous answer arrives, and a
 * request written into a connection the server has just closed is reset, never answered
 * (measured: every such client reset when the close landed between two of its requests). A
 * connection that brings nothing in this time is idle for real and is closed.
 */
export const IDLE_CONNECTION_DRAIN_MS = 250;

/**
 * Ends keep-alive on a node:http server being shut down. server.close() stops accepting but waits
 * for open connections, and a kept-alive connection stays open while its client keeps sending
 * requests (or until its idle timeout): so once the drain begins, every response not yet started
 * says `Connection: close` (node then closes the socket after sending it), and connections left
 * idle are closed after IDLE_CONNECTION_DRAIN_MS. Attach it when the server is created.
 */
export class KeepAliveDrain {
  private draining = false;
  private readonly inFlight = new Set<ServerResponse>();
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly server: Server,
    private readonly idleMs = IDLE_CONNECTION_DRAIN_MS,
  ) {
    const inFlight = this.inFlight;
    // One listener shared by every response (`this` is the response): no closure per request.
    function untrack(this: ServerResponse): void {
      inFlight.delete(this);
    }
    // Before the app's own listener, so the app's response already knows.
    server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
      if (this.draining) {
        res.shouldKeepAlive = false;
      } else {
        inFlight.add(res);
        res.on('close', untrack);
      }
    });
  }

  get inProgress(): boolean {
    return this.draining;
  }

  /**
   * Stops accepting connections at once (before it returns) and resolves once every open one has
   * ended: each after its response in flight, or, idle, after IDLE_CONNECTION_DRAIN_MS. Bounding
   * the wait (a slow request) is the caller's: closeServerWithin.
   */
  begin(): Promise<void> {
    this.draining = true;
    for (const res of this.inFlight) {
      if (!res.headersSent) res.shouldKeepAlive = false;
      // Its headers said keep-alive: once it ends, its idle connection is closed like the others.
      else
        res.once('close', () => {
          this.closeIdleSoon();
        });
    }
    this.inFlight.clear();
    const closed = new Promise<void>((resolve) => {
      // net.Server's close, not http.Server's: the latter also closes the idle connections at
      // once, which is the race IDLE_CONNECTION_DRAIN_MS avoids. Connections are still tracked.
      NetServer.prototype.close.call(this.server, () => {
        for (const timer of this.timers) clearTimeout(timer);
        this.timers.clear();
        resolve();
      });
    });
    this.closeIdleSoon();
    return closed;
  }

  private closeIdleSoon(): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.server.closeIdleConnections();
    }, this.idleMs);
    this.timers.add(timer);
  }
}
