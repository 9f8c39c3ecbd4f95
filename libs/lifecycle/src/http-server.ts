import { once } from 'node:events';
import { createServer } from 'node:http';
import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@linkservice/logger';
import { answerClientErrors } from './client-errors';
import { KeepAliveDrain } from './keep-alive-drain';
import type { StartedService } from './service';

/**
 * Stops accepting connections at once (before it returns) and resolves when the open ones have
 * ended; with the server's KeepAliveDrain, kept-alive connections end after their next response.
 * Any still open after `graceMs` (a slow client, a long request) are cut, so none can keep a
 * terminating pod alive.
 */
export async function closeServerWithin(
  server: Server,
  graceMs: number,
  logger: Logger,
  drain?: KeepAliveDrain,
): Promise<void> {
  const closed =
    drain?.begin() ??
    new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
  const cutOff = setTimeout(() => {
    logger.warn('grace period over: closing the remaining connections');
    server.closeAllConnections();
  }, graceMs);
  await closed;
  clearTimeout(cutOff);
}

export interface HttpServiceOptions {
  /** 'gateway': the log line says `gateway listening`, with the port. */
  name: string;
  port: number;
  logger: Logger;
  /** node's default (5 s) unless given. */
  keepAliveTimeoutMs?: number;
}

/**
 * An HTTP service's start for runService: listens, logs `<name> listening` with the port, and
 * stops by draining the server within the grace period: no new connections, `Connection: close`
 * on every response not yet started, idle connections closed (KeepAliveDrain), what is still
 * open when the grace ends cut (closeServerWithin). runService has failed /readyz by then.
 */
export async function startHttpService(
  listener: RequestListener,
  options: HttpServiceOptions,
): Promise<StartedService & { server: Server }> {
  const { name, port, logger } = options;
  const server = createServer(listener);
  answerClientErrors(server);
  const drain = new KeepAliveDrain(server);
  if (options.keepAliveTimeoutMs !== undefined)
    server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.listen(port);
  await once(server, 'listening');
  const listening = (server.address() as AddressInfo).port;
  logger.info({ port: listening }, `${name} listening`);
  return {
    server,
    intake: 'connections',
    ports: { http: listening },
    stop: async (graceMs) => {
      await closeServerWithin(server, graceMs, logger, drain);
      return 'drained';
    },
  };
}
