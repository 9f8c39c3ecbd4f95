import { once } from 'node:events';
import { createServer } from 'node:http';
import type { RequestListener, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@linkservice/logger';
import { answerClientErrors } from './client-errors';
import type { StartedService } from './service';

/**
 * Stops accepting connections at once (before it returns) and resolves when the open ones have
 * ended. Any still open after `graceMs` (a slow client, a long request) are cut, so none can
 * keep a terminating pod alive.
 */
export async function closeServerWithin(
  server: Server,
  graceMs: number,
  logger: Logger,
): Promise<void> {
  const closed = new Promise<void>((resolve) => {
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
  /** Runs as stop() begins, before the server closes (e.g. to answer with Connection: close). */
  onStop?: () => void;
}

/**
 * An HTTP service's start for runService: listens, logs `<name> listening` with the port, and
 * stops by closing the server within the grace period (closeServerWithin).
 */
export async function startHttpService(
  listener: RequestListener,
  options: HttpServiceOptions,
): Promise<StartedService & { server: Server }> {
  const { name, port, logger } = options;
  const server = createServer(listener);
  answerClientErrors(server);
  if (options.keepAliveTimeoutMs !== undefined)
    server.keepAliveTimeout = options.keepAliveTimeoutMs;
  server.listen(port);
  await once(server, 'listening');
  logger.info({ port: (server.address() as AddressInfo).port }, `${name} listening`);
  return {
    server,
    intake: 'connections',
    stop: async (graceMs) => {
      options.onStop?.();
      await closeServerWithin(server, graceMs, logger);
      return 'drained';
    },
  };
}
