// Telemetry first: it can only instrument express, pg and ioredis if it loads before them.
import { telemetry } from './instrument';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadOrExit } from '@linkservice/config';
import { createLogger } from '@linkservice/logger';
import { createApp } from './app';
import { loadConfig } from './config';
import { buildDeps } from './deps';

async function main(): Promise<void> {
  const config = loadOrExit(() => loadConfig());
  const logger = createLogger('gateway', config.LOG_LEVEL);
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    process.exit(1);
  });
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled rejection');
    process.exit(1);
  });

  const resources = buildDeps(config, logger);
  let shuttingDown = false;
  const server = createServer(createApp(resources.deps, { isShuttingDown: () => shuttingDown }));

  server.listen(config.GATEWAY_PORT);
  await once(server, 'listening');
  logger.info({ port: (server.address() as AddressInfo).port }, 'gateway listening');

  /**
   * Stop accepting, let in-flight requests finish (at most SHUTDOWN_GRACE_MS, then cut what is
   * left), then close Redis and the pool: a request never loses its database mid-flight.
   */
  const shutdown = async (signal: NodeJS.Signals): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    const closed = new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
    const cutOff = setTimeout(() => {
      logger.warn('grace period over: closing the remaining connections');
      server.closeAllConnections();
    }, config.SHUTDOWN_GRACE_MS);
    await closed;
    clearTimeout(cutOff);
    await resources.close();
    await telemetry.shutdown();
    logger.info('stopped');
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      shutdown(signal).catch((error: unknown) => {
        logger.fatal({ err: error }, 'shutdown failed');
        process.exit(1);
      });
    });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `gateway failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
