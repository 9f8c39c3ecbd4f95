import type { Server } from 'node:http';
import type { Logger } from '@linkservice/logger';

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
