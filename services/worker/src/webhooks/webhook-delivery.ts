import { throttledErrorLog } from '@linkservice/logger';
import type { ResolveHost } from '@linkservice/webhooks';
import { addressPolicyOf, secretBoxOf } from '@linkservice/webhooks';
import { Queue, Worker } from 'bullmq';
import type { WorkerDeps } from '../deps';
import { AttemptLimiter } from './attempt-limiter';
import {
  deliveryQueuePrefix,
  MAX_DELIVERIES_PER_JOB,
  WEBHOOK_DELIVERIES_QUEUE,
} from './delivery-job.contract';
import { deliveryProcessor } from './delivery.processor';
import { WebhookRelay } from './webhook-relay';

/** Deliveries a relay pass claims at most. */
const CLAIM_LIMIT = 200;

/**
 * The relay's stale bound (see WebhookRelayOptions.staleAfterMs): 2 minutes, and never less
 * than three attempt timeouts.
 */
const STALE_AFTER_MS = 2 * 60_000;

export interface WebhookDeliveryOptions {
  /** Tests: a shorter stale bound, BullMQ lock and stalled check, to see a killed worker's jobs recovered. */
  staleAfterMs?: number;
  lockDurationMs?: number;
  stalledIntervalMs?: number;
  /** Tests: how receivers' host names resolve. */
  resolve?: ResolveHost;
}

/** The running delivery: the relay, the queue it adds to, and the consumer. */
export interface WebhookDelivery {
  readonly worker: Worker;
  readonly relay: WebhookRelay;
  /** Stops the relay, lets in-flight attempts finish and record, then closes the queue. */
  stop(): Promise<void>;
  /**
   * Tests: a worker killed mid-delivery. Its attempts are cut off and record nothing; its jobs
   * are left to BullMQ's stalled-job recovery, its deliveries to the relays' stale bound.
   */
  kill(): Promise<void>;
}

/**
 * Starts webhook delivery on the deps' queue connection, under REDIS_PREFIX (with the
 * `{webhook-deliveries}` hash tag on a cluster): the relay's passes and the BullMQ Worker of
 * the delivery queue, each with its error listener. Used by startWorker and, in-process, by the
 * tests.
 */
export function startWebhookDelivery(
  deps: Pick<
    WorkerDeps,
    'config' | 'logger' | 'queueRedis' | 'metrics' | 'webhookDeliveries' | 'webhookRelay'
  >,
  options: WebhookDeliveryOptions = {},
): WebhookDelivery {
  const { config, logger } = deps;
  const prefix = deliveryQueuePrefix(config.REDIS_PREFIX, deps.queueRedis.isCluster);
  const queue = new Queue(WEBHOOK_DELIVERIES_QUEUE, { connection: deps.queueRedis, prefix });
  queue.on('error', throttledErrorLog(logger, { message: 'webhook queue: redis error' }));

  const relay = new WebhookRelay(
    {
      repository: deps.webhookRelay,
      queue,
      metrics: deps.metrics.webhooks,
      logger,
    },
    {
      intervalMs: config.WEBHOOK_RELAY_INTERVAL_MS,
      claimLimit: CLAIM_LIMIT,
      staleAfterMs: options.staleAfterMs ?? Math.max(STALE_AFTER_MS, 3 * config.WEBHOOK_TIMEOUT_MS),
      // Jobs wait in Redis a few seconds at most, far from the stale bound; the rest of a
      // backlog waits in Postgres, where the backlog gauge sees it.
      maxWaitingJobs: 4 * config.WEBHOOK_CONCURRENCY,
      maxPerJob: Math.min(MAX_DELIVERIES_PER_JOB, config.WEBHOOK_CONCURRENCY),
    },
  );

  const worker = new Worker(
    WEBHOOK_DELIVERIES_QUEUE,
    deliveryProcessor({
      deliveries: deps.webhookDeliveries,
      secrets: secretBoxOf(config),
      policy: addressPolicyOf(config),
      // WEBHOOK_CONCURRENCY bounds attempts in flight; jobs beyond it wait for permits.
      limiter: new AttemptLimiter(config.WEBHOOK_CONCURRENCY),
      metrics: deps.metrics.webhooks,
      logger,
      linkDomain: config.LINK_DOMAIN,
      schedule: config.WEBHOOK_RETRY_SCHEDULE,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      onDelivered: () => {
        relay.wake();
      },
      resolve: options.resolve,
    }),
    {
      connection: deps.queueRedis,
      prefix,
      concurrency: config.WEBHOOK_CONCURRENCY,
      // No queue telemetry: a job is the relay's batch, not a request's; each attempt gets a
      // span in its event's trace instead.
      ...(options.lockDurationMs !== undefined && { lockDuration: options.lockDurationMs }),
      ...(options.stalledIntervalMs !== undefined && {
        stalledInterval: options.stalledIntervalMs,
      }),
    },
  );
  worker.on('error', throttledErrorLog(logger, { message: 'webhook worker: redis error' }));
  worker.on('failed', (job, error) => {
    logger.warn(
      { err: error, jobId: job?.id, attemptsMade: job?.attemptsMade },
      'webhook delivery job failed',
    );
  });
  relay.start();

  return {
    worker,
    relay,
    stop: async () => {
      await relay.stop();
      await worker.close();
      await queue.close();
    },
    kill: async () => {
      await relay.stop();
      worker.cancelAllJobs('killed');
      await worker.close(true);
      await queue.close();
    },
  };
}
