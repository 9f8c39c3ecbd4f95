import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import { pingDatabase } from '@linkservice/db';
import type { BuildOptions, RedisClient, Resources } from '@linkservice/lifecycle';
import {
  closeRedis,
  createPostgres,
  createRedisClient,
  ShutdownState,
} from '@linkservice/lifecycle';
import { LinkCache } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import {
  CreationRequestsRepository,
  CreationTransactions,
  IdempotencyKeysRepository,
} from '@linkservice/creation';
import type { WorkerConfig } from './config';
import { CreationGroupWriter } from './creation-group.writer';
import { AnalyticsPartitionsRepository } from './analytics/analytics-partitions.repository';
import { LinkDimensionDaysRepository } from './analytics/link-dimension-days.repository';
import { InstallRetentionRepository } from './install-retention.repository';
import { LinkInserts } from './link-inserts.repository';
import { LoneCreations } from './lone-creation.repository';
import { WorkerMetrics } from './metrics';
import { WebhookDeliveryRepository } from './webhooks/webhook-delivery.repository';
import { WebhookRelayRepository } from './webhooks/webhook-relay.repository';
import { WebhookRetentionRepository } from './webhooks/webhook-retention.repository';

/** The clients a worker process opens; what a test may swap (e.g. its own pool). */
export interface WorkerClients {
  db: Kysely<Database>;
  /** BullMQ's: maxRetriesPerRequest null, so its blocking commands wait out reconnects. */
  queueRedis: RedisClient;
  /** /readyz's: fails a PING at once while Redis is away instead of waiting for it. */
  probeRedis: RedisClient;
}

/**
 * Everything the worker runs on, built once per process by buildDeps(); the job module and the
 * cleanup receive their services from here and never build any.
 */
export interface WorkerDeps extends WorkerClients {
  config: WorkerConfig;
  logger: Logger;
  links: LinkInserts;
  /** The creation protocol's bookkeeping rows: the cleanup deletes the old ones. */
  creationRequests: CreationRequestsRepository;
  /** The gateway's Idempotency-Key records: the cleanup deletes those past their 24 hours. */
  idempotencyKeys: IdempotencyKeysRepository;
  /** Installs reported through the gateway: the retention deletes the old ones. */
  installs: InstallRetentionRepository;
  /** Derives links' click_dimension_days of finished days (the click-analytics migration). */
  linkDimensionDays: LinkDimensionDaysRepository;
  /** The analytics tables' monthly partitions and retention (the click-analytics migration). */
  analyticsPartitions: AnalyticsPartitionsRepository;
  creation: CreationGroupWriter;
  /** Webhooks: the relay's claim, the delivery's load and record, the tables' retention. */
  webhookRelay: WebhookRelayRepository;
  webhookDeliveries: WebhookDeliveryRepository;
  webhookRetention: WebhookRetentionRepository;
  /** The process' Prometheus metrics; main.ts serves them on METRICS_PORT. */
  metrics: WorkerMetrics;
}

export type WorkerResources = Resources<WorkerDeps>;

/** The worker's composition root: opens its clients, then builds every service over them. */
export function buildDeps(
  config: WorkerConfig,
  logger: Logger,
  { shutdown = new ShutdownState(), clients }: BuildOptions<WorkerClients> = {},
): WorkerResources {
  const postgres = createPostgres(config, { applicationName: 'linkservice-worker', logger });
  // Reconnect for as long as the worker runs; stop once it shuts down, so closing never waits
  // for a Redis that is not there.
  const retryStrategy = (attempt: number): number | null =>
    shutdown.inProgress ? null : Math.min(100 * 2 ** attempt, 2_000);
  // BullMQ's blocking commands must wait out reconnects rather than fail after N retries.
  const queueRedis = createRedisClient(config, {
    connectionName: 'linkservice-worker',
    logger,
    maxRetriesPerRequest: null,
    retryStrategy,
  });
  // Readiness must answer now, not after Redis comes back: fail commands fast on this one.
  const probeRedis = createRedisClient(config, {
    connectionName: 'linkservice-worker-probe',
    logger,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    retryStrategy,
  });
  const opened: WorkerClients = { db: postgres.db, queueRedis, probeRedis };
  const used = clients ? clients(opened) : opened;

  const links = new LinkInserts();
  const creationRequests = new CreationRequestsRepository(used.db);
  const idempotencyKeys = new IdempotencyKeysRepository(used.db);
  const installs = new InstallRetentionRepository(used.db);
  const linkDimensionDays = new LinkDimensionDaysRepository(used.db);
  const analyticsPartitions = new AnalyticsPartitionsRepository(used.db, {
    hourlyDays: config.ANALYTICS_HOURLY_RETENTION_DAYS,
    dailyDays: config.ANALYTICS_DAILY_RETENTION_DAYS,
  });
  const creation = new CreationGroupWriter(
    new CreationTransactions(used.db),
    links,
    new LoneCreations(used.db),
    {
      linkDomain: config.LINK_DOMAIN,
      logger,
      testDelayMs: config.WORKER_TEST_DELAY_MS,
      // On the queue connection, the one the Worker completes jobs on: Redis runs one
      // connection's commands in order, so the invalidation (sent, not awaited, right after the
      // commit) is done before the job's completion event exists, without a round trip of its own.
      // While Redis is away the job cannot complete anyway, and the invalidation waits for the
      // reconnect like BullMQ's own commands.
      linkCache: new LinkCache(used.queueRedis, config.REDIS_PREFIX),
    },
  );

  let closing: Promise<void> | undefined;
  return {
    deps: {
      ...used,
      config,
      logger,
      links,
      creationRequests,
      idempotencyKeys,
      installs,
      linkDimensionDays,
      analyticsPartitions,
      creation,
      webhookRelay: new WebhookRelayRepository(used.db),
      webhookDeliveries: new WebhookDeliveryRepository(used.db),
      webhookRetention: new WebhookRetentionRepository(used.db),
      metrics: new WorkerMetrics(),
    },
    // A job taken before Postgres answers would only fail and be retried.
    dependencies: {
      postgres: () => pingDatabase(postgres.db),
      redis: () => queueRedis.ping(),
    },
    // What was opened here, whatever a test swapped in.
    close: () =>
      (closing ??= (async () => {
        await Promise.all([closeRedis(queueRedis), closeRedis(probeRedis)]);
        await postgres.close();
      })()),
  };
}
