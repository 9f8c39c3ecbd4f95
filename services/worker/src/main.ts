// Telemetry first: it can only instrument pg, ioredis and bullmq if it loads before them.
import { telemetry } from './instrument';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadOrExit } from '@linkservice/config';
import { CreationRequestsRepository, scheduleCreationRequestsCleanup } from '@linkservice/creation';
import { createDb } from '@linkservice/db';
import type { ShutdownSignal } from '@linkservice/lifecycle';
import {
  closeRedis,
  createRedisClient,
  exitOnFatalErrors,
  onShutdownSignal,
  runService,
} from '@linkservice/lifecycle';
import { createLogger } from '@linkservice/logger';
import { loadConfig } from './config';
import { createHealthServer } from './health.server';
import { LinksRepository } from './links.repository';
import { startCreationWorker } from './worker';

async function main(): Promise<void> {
  const config = loadOrExit(() => loadConfig());
  const logger = createLogger('worker', config.LOG_LEVEL);
  exitOnFatalErrors(logger);
  if (config.WORKER_CONCURRENCY >= config.DATABASE_POOL_SIZE) {
    // Each running job holds a connection for its transaction; cleanup and /readyz need one too.
    logger.warn(
      { concurrency: config.WORKER_CONCURRENCY, poolSize: config.DATABASE_POOL_SIZE },
      'WORKER_CONCURRENCY should stay below DATABASE_POOL_SIZE',
    );
  }
  if (config.WORKER_TEST_DELAY_MS > 0) {
    logger.warn({ delayMs: config.WORKER_TEST_DELAY_MS }, 'test-only creation delay is on');
  }

  const postgres = createDb({
    connectionString: config.DATABASE_URL,
    max: config.DATABASE_POOL_SIZE,
    applicationName: 'linkservice-worker',
    onConnectionError: (error) => {
      logger.warn({ err: error }, 'postgres connection lost');
    },
  });
  const repository = new LinksRepository(postgres.db);
  let shuttingDown = false;
  // Reconnect for as long as the worker runs; stop once it shuts down, so closing never waits
  // for a Redis that is not there.
  const retryStrategy = (attempt: number): number | null =>
    shuttingDown ? null : Math.min(100 * 2 ** attempt, 2_000);
  // BullMQ's blocking commands must wait out reconnects rather than fail after N retries.
  const queueRedis = createRedisClient(config.REDIS_URL, {
    connectionName: 'linkservice-worker',
    logger,
    maxRetriesPerRequest: null,
    retryStrategy,
  });
  // Readiness must answer now, not after Redis comes back: fail commands fast on this one.
  const probeRedis = createRedisClient(config.REDIS_URL, {
    connectionName: 'linkservice-worker-probe',
    logger,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    retryStrategy,
  });

  const health = createHealthServer({
    probes: { postgres: () => repository.ping(), redis: () => probeRedis.ping() },
    isShuttingDown: () => shuttingDown,
    logger,
  });
  health.listen(config.WORKER_HEALTH_PORT);
  await once(health, 'listening');

  const worker = startCreationWorker({
    db: postgres.db,
    connection: queueRedis,
    prefix: config.REDIS_PREFIX,
    logger,
    linkDomain: config.LINK_DOMAIN,
    concurrency: config.WORKER_CONCURRENCY,
    keepCompleted: {
      count: config.WORKER_KEEP_COMPLETED_JOBS,
      age: config.WORKER_KEEP_COMPLETED_SECONDS,
    },
    keepFailed: { count: config.WORKER_KEEP_FAILED_JOBS, age: config.WORKER_KEEP_FAILED_SECONDS },
    testDelayMs: config.WORKER_TEST_DELAY_MS,
  });
  const cleanup = scheduleCreationRequestsCleanup(
    new CreationRequestsRepository(postgres.db),
    {
      retentionHours: config.CREATION_REQUESTS_RETENTION_HOURS,
      intervalMs: config.CREATION_REQUESTS_CLEANUP_INTERVAL_MS,
    },
    logger,
  );
  logger.info(
    {
      healthPort: (health.address() as AddressInfo).port,
      concurrency: config.WORKER_CONCURRENCY,
    },
    'worker started',
  );

  /**
   * Stop taking jobs and let in-flight ones finish (each is bounded by its deadline; the grace
   * period bounds the whole), then close Redis and the pool. A job cut off here rolls back and
   * is redelivered, or settled by the gateway: never half-done.
   */
  const shutdown = async (signal: ShutdownSignal): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    logger.info({ signal }, 'shutting down');
    if (queueRedis.status !== 'ready') {
      // Redis is away; the retry strategy gives up at the next attempt. Wait for that while the
      // Worker still listens (it drops its listeners on close, and a late connect failure would
      // surface as an unhandled 'error').
      await worker.waitUntilReady().catch(() => undefined);
    }
    const finished = worker.close().then(() => true);
    const graceOver = sleep(config.SHUTDOWN_GRACE_MS, false, { ref: false });
    if (!(await Promise.race([finished, graceOver]))) {
      // Exiting drops the connections: Postgres rolls the open transactions back.
      logger.warn('grace period over: exiting with jobs still running; they roll back');
      process.exit(1);
    }
    await cleanup.stop();
    await Promise.all([closeRedis(queueRedis), closeRedis(probeRedis)]);
    await postgres.close();
    health.close();
    await telemetry.shutdown();
    logger.info('stopped');
    process.exit(0);
  };
  onShutdownSignal(logger, shutdown);
}

runService('worker', main);
