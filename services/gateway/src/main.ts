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
import { GracefulShutdown } from './http/graceful-shutdown';

/** Time for closing Redis and the pool after the last request ended (the chart allows 5 s). */
const CLOSE_DEPENDENCIES_MS = 3_000;

/** True when `work` finished in time; false when the time ran out first. */
async function settlesWithin(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<false>((resolve) => {
    timer = setTimeout(() => {
      resolve(false);
    }, ms);
  });
  const outcome = await Promise.race([work.then(() => true), timeUp]);
  clearTimeout(timer);
  return outcome;
}

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
  const shutdown = new GracefulShutdown();
  const server = createServer(createApp(resources.deps, { shutdown }));

  server.listen(config.GATEWAY_PORT);
  await once(server, 'listening');
  logger.info({ port: (server.address() as AddressInfo).port }, 'gateway listening');

  /**
   * Stop accepting, let in-flight requests finish (at most SHUTDOWN_GRACE_MS, then cut what is
   * left), then close Redis and the pool: a request never loses its database mid-flight.
   */
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (shutdown.inProgress) return;
    shutdown.begin();
    const closed = new Promise<void>((resolve) => {
      server.close(() => {
        resolve();
      });
    });
    logger.info({ signal }, 'shutting down: no longer accepting connections');
    const cutOff = setTimeout(() => {
      logger.warn('grace period over: closing the remaining connections');
      server.closeAllConnections();
    }, config.SHUTDOWN_GRACE_MS);
    await closed;
    clearTimeout(cutOff);
    // Bounded: a client stuck reconnecting to a dead Redis must not keep the pod terminating.
    const closedDeps = await settlesWithin(
      Promise.all([resources.close(), telemetry.shutdown()]).then(
        () => undefined,
        (error: unknown) => {
          logger.warn({ err: error }, 'closing clients failed');
        },
      ),
      CLOSE_DEPENDENCIES_MS,
    );
    if (!closedDeps) logger.warn('Redis/Postgres clients did not close in time; exiting anyway');
    logger.info('stopped');
    process.exit(0);
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      stop(signal).catch((error: unknown) => {
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
