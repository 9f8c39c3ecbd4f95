import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { CREATE_LINKS_QUEUE, creationQueuePrefix } from '@linkservice/creation';
import type { ServiceContext, StartedService } from '@linkservice/lifecycle';
import { pingDatabase } from '@linkservice/db';
import { createProbeServer, settlesWithin } from '@linkservice/lifecycle';
import { throttledErrorLog } from '@linkservice/logger';
import { queueTelemetry } from '@linkservice/telemetry';
import { Worker } from 'bullmq';
import { scheduleAnalyticsPartitions } from './analytics/analytics-partitions.schedule';
import type { WorkerConfig } from './config';
import type { CreationJobReply } from './creation-job.processor';
import { createLinksProcessor, UnknownAppFailure } from './creation-job.processor';
import type { WorkerDeps } from './deps';
import { measuredProcessor } from './metrics';
import { scheduleWorkerRetention } from './retention';
import { startWebhookDelivery } from './webhooks/webhook-delivery';

/**
 * Starts consuming create-links jobs on the deps' queue connection, under REDIS_PREFIX (the
 * prefix the gateway's CreationClient uses). Used by startWorker and, in-process, by the tests.
 * Closing the returned Worker lets in-flight jobs finish; the connection stays the deps'.
 */
export function startCreationWorker(
  deps: Pick<WorkerDeps, 'config' | 'logger' | 'queueRedis' | 'creation' | 'metrics'>,
): Worker {
  const { config, logger } = deps;
  const worker = new Worker<unknown, CreationJobReply>(
    CREATE_LINKS_QUEUE,
    measuredProcessor(
      createLinksProcessor(deps.creation, logger, { redisPrefix: config.REDIS_PREFIX }),
      deps.metrics,
    ),
    {
      connection: deps.queueRedis,
      prefix: creationQueuePrefix(config.REDIS_PREFIX, deps.queueRedis.isCluster),
      concurrency: config.WORKER_CONCURRENCY,
      // While tracing is on: each job's consumer span continues the producer's trace, and the
      // job's SQL spans are its children.
      telemetry: queueTelemetry(),
      removeOnComplete: {
        count: config.WORKER_KEEP_COMPLETED_JOBS,
        age: config.WORKER_KEEP_COMPLETED_SECONDS,
      },
      removeOnFail: {
        count: config.WORKER_KEEP_FAILED_JOBS,
        age: config.WORKER_KEEP_FAILED_SECONDS,
      },
    },
  );
  worker.on('error', throttledErrorLog(logger, { message: 'creation worker: redis error' }));
  worker.on('failed', (job, error) => {
    // The processor has logged this one, with its likely cause.
    if (error instanceof UnknownAppFailure) return;
    logger.warn(
      { err: error, jobId: job?.id, attemptsMade: job?.attemptsMade },
      'creation job attempt failed',
    );
  });
  return worker;
}

/**
 * The worker's start for runService: the probe server on WORKER_HEALTH_PORT, the consumer, the
 * webhook delivery (relay and consumer), the retention deletes (retention.ts) and the analytics tables' months ahead. Stopping lets in-flight jobs finish
 * (each is bounded by its deadline; the grace period bounds the whole); a job cut off by the exit
 * rolls back and is redelivered, or settled by the gateway: never half-done.
 */
export async function startWorker(
  deps: WorkerDeps,
  { config, logger, shutdown }: ServiceContext<WorkerConfig>,
): Promise<StartedService> {
  if (config.WORKER_CONCURRENCY >= config.DATABASE_POOL_SIZE) {
    // Each running job holds a connection for its transaction; the deletes and /readyz need one too.
    logger.warn(
      { concurrency: config.WORKER_CONCURRENCY, poolSize: config.DATABASE_POOL_SIZE },
      'WORKER_CONCURRENCY should stay below DATABASE_POOL_SIZE',
    );
  }
  if (config.WORKER_TEST_DELAY_MS > 0) {
    logger.warn({ delayMs: config.WORKER_TEST_DELAY_MS }, 'test-only creation delay is on');
  }
  const probes = createProbeServer({
    probes: { postgres: () => pingDatabase(deps.db), redis: () => deps.probeRedis.ping() },
    isShuttingDown: () => shutdown.inProgress,
    logger,
  });
  probes.listen(config.WORKER_HEALTH_PORT);
  await once(probes, 'listening');

  const worker = startCreationWorker(deps);
  const webhooks = startWebhookDelivery(deps);
  const retention = scheduleWorkerRetention(deps, config);
  const partitions = scheduleAnalyticsPartitions(deps.analyticsPartitions, logger);
  const healthPort = (probes.address() as AddressInfo).port;
  logger.info({ healthPort, concurrency: config.WORKER_CONCURRENCY }, 'worker started');

  return {
    intake: 'jobs',
    ports: { health: healthPort },
    stop: async (graceMs) => {
      // What the drain stops, by name: a drain cut off by the grace period says which part of
      // it was still running.
      const parts = {
        creations: () => worker.close(),
        // Delivery attempts in flight finish (each bounded by WEBHOOK_TIMEOUT_MS) and record.
        webhooks: () => webhooks.stop(),
        retention: () => retention.stop(),
        partitions: () => partitions.stop(),
      };
      const running = new Set(Object.keys(parts));
      // The grace period bounds everything stop does, the wait for a Redis that is away included.
      const finished = (async () => {
        if (deps.queueRedis.status !== 'ready') {
          // Redis is away; the retry strategy gives up at the next attempt. Wait for that while
          // the Worker still listens (it drops its listeners on close, and a late connect
          // failure would surface as an unhandled 'error').
          await worker.waitUntilReady().catch(() => undefined);
          await webhooks.worker.waitUntilReady().catch(() => undefined);
        }
        await Promise.all(
          Object.entries(parts).map(async ([part, stop]) => {
            await stop();
            running.delete(part);
          }),
        );
      })();
      if (!(await settlesWithin(finished, graceMs))) {
        logger.warn(
          { stillRunning: [...running] },
          'grace period over: exiting with jobs still running; they roll back',
        );
        return 'unfinished';
      }
      // Liveness answered through the drain; nothing is left for the kubelet to probe.
      probes.close();
      return 'drained';
    },
  };
}
