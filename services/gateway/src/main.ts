// Telemetry first: it can only instrument express, pg and ioredis if it loads before them.
import { telemetry } from './instrument';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadOrExit } from '@linkservice/config';
import type { ShutdownSignal } from '@linkservice/lifecycle';
import {
  closeServerWithin,
  exitOnFatalErrors,
  onShutdownSignal,
  runService,
} from '@linkservice/lifecycle';
import { createLogger } from '@linkservice/logger';
import { createApp } from './app';
import { loadConfig } from './config';
import { buildDeps } from './deps';
import { GracefulShutdown } from './http/graceful-shutdown';

/**
 * After the last request ended, time for closing Redis and the pool, then for flushing
 * telemetry: 4.5 s together, within the 5 s the chart allows beyond SHUTDOWN_GRACE_MS.
 */
const CLOSE_DEPENDENCIES_MS = 3_000;
const FLUSH_TELEMETRY_MS = 1_500;

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
  exitOnFatalErrors(logger);

  const resources = buildDeps(config, logger);
  const shutdown = new GracefulShutdown();
  const server = createServer(createApp(resources.deps, { shutdown }));

  server.listen(config.GATEWAY_PORT);
  await once(server, 'listening');
  logger.info({ port: (server.address() as AddressInfo).port }, 'gateway listening');

  /**
   * Stop accepting, let in-flight requests finish (at most SHUTDOWN_GRACE_MS, then cut what is
   * left), then close Redis and the pool (a request never loses its database mid-flight), then
   * flush telemetry.
   */
  const stop = async (signal: ShutdownSignal): Promise<void> => {
    if (shutdown.inProgress) return;
    shutdown.begin();
    // Closed before the line is logged: whoever reads it may rely on new connections failing.
    const closed = closeServerWithin(server, config.SHUTDOWN_GRACE_MS, logger);
    logger.info({ signal }, 'shutting down: no longer accepting connections');
    await closed;
    // Bounded: a client stuck reconnecting to a dead Redis must not keep the pod terminating.
    const closedDeps = await settlesWithin(
      resources.close().catch((error: unknown) => {
        logger.warn({ err: error }, 'closing clients failed');
      }),
      CLOSE_DEPENDENCIES_MS,
    );
    if (!closedDeps) logger.warn('Redis/Postgres clients did not close in time; exiting anyway');
    // Last, so the spans of the shutdown itself (QUIT, the pool's end) are exported too.
    const flushed = await settlesWithin(
      telemetry.shutdown().catch((error: unknown) => {
        logger.warn({ err: error }, 'flushing telemetry failed');
      }),
      FLUSH_TELEMETRY_MS,
    );
    if (!flushed) logger.warn('telemetry did not flush in time; exiting anyway');
    logger.info('stopped');
    process.exit(0);
  };
  onShutdownSignal(logger, stop);
}

runService('gateway', main);
