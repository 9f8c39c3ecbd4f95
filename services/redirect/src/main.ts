// Telemetry first: it can only instrument node:http, pg and ioredis if it loads before them.
import { telemetry } from './instrument';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadOrExit } from '@linkservice/config';
import {
  closeServerWithin,
  exitOnFatalErrors,
  onShutdownSignal,
  runService,
} from '@linkservice/lifecycle';
import type { ShutdownSignal } from '@linkservice/lifecycle';
import { createLogger } from '@linkservice/logger';
import { createApp } from './app';
import { loadConfig } from './config';
import { buildDeps } from './deps';

async function main(): Promise<void> {
  const config = loadOrExit(() => loadConfig());
  const logger = createLogger('redirect', config.LOG_LEVEL);
  exitOnFatalErrors(logger);

  const resources = buildDeps(config, logger);
  let shuttingDown = false;
  const server = createServer(createApp(resources.deps, { isShuttingDown: () => shuttingDown }));
  // Behind a load balancer keep-alive sockets outlive its idle timeout, not the other way round.
  server.keepAliveTimeout = 65_000;

  server.listen(config.REDIRECT_PORT);
  await once(server, 'listening');
  // Leftover click batches (a crash, a dead replica) are applied first, then every interval.
  // Redis commands fail until it is connected (no offline queue), so begin once it is.
  const { redis } = resources.deps;
  if (redis.status === 'ready') resources.flusher.start();
  else
    redis.once('ready', () => {
      resources.flusher.start();
    });
  logger.info({ port: (server.address() as AddressInfo).port }, 'redirect listening');

  /**
   * Stop accepting and let in-flight redirects finish (each has counted its click in Redis
   * before answering), at most SHUTDOWN_GRACE_MS; then a final click flush, then Redis and the
   * pool. A clean stop loses no click.
   */
  const shutdown = async (signal: ShutdownSignal): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    await closeServerWithin(server, config.SHUTDOWN_GRACE_MS, logger);
    await resources.close();
    await telemetry.shutdown();
    logger.info('stopped');
    process.exit(0);
  };
  onShutdownSignal(logger, shutdown);
}

runService('redirect', main);
