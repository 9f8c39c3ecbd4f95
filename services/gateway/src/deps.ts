import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import type { ReplicaReads } from '@linkservice/db';
import { pingDatabase } from '@linkservice/db';
import type { BuildOptions, RedisClient, Resources } from '@linkservice/lifecycle';
import {
  closeRedis,
  createPostgres,
  createRedisClient,
  openReadReplica,
} from '@linkservice/lifecycle';
import { ClickTokenStore, LinkCache } from '@linkservice/link-cache';
import { ReplicaReadMetrics } from '@linkservice/metrics';
import type { Logger } from '@linkservice/logger';
import type { CreationClient } from '@linkservice/creation';
import {
  createCreationClient,
  CreationRequestsRepository,
  IdempotencyKeysRepository,
} from '@linkservice/creation';
import { AppsService } from './apps/apps.service';
import { KeysRepository } from './auth/keys.repository';
import type { GatewayConfig } from './config';
import { CreationLimiter } from './limits/creation-limiter';
import { SdkLimiter } from './limits/sdk-limiter';
import { LinkSubmissionService } from './creation/link-submission.service';
import { IdempotencyService } from './creation/idempotency.service';
import { LinksRepository } from './links/links.repository';
import { LinksService } from './links/links.service';
import { AnalyticsRepository } from './analytics/analytics.repository';
import { AnalyticsService } from './analytics/analytics.service';
import { FENCE_TTL_SECONDS, ReadYourWrites, WriteFences } from '@linkservice/db';
import { GatewayMetrics } from './metrics';
import { InstallsRepository } from './sdk/installs.repository';
import { InstallsService } from './sdk/installs.service';
import { ReceiptSigner } from './sdk/receipts';
import { ResolveRepository } from './sdk/resolve.repository';
import { ResolveService } from './sdk/resolve.service';
import { addressPolicyOf, secretBoxOf } from '@linkservice/webhooks';
import { WebhooksRepository } from './webhooks/webhooks.repository';
import { WebhooksService } from './webhooks/webhooks.service';

/** The clients a gateway process opens; what a test may swap (a dead Redis, a counting Kysely). */
export interface GatewayClients {
  db: Kysely<Database>;
  /**
   * For plain commands (rate limits, readiness, the link cache). Fails a command fast when Redis
   * is away instead of queueing it, and after REDIS_COMMAND_TIMEOUT_MS when it does not answer,
   * so requests answer 503 rather than hang. Keys go under
   * config.REDIS_PREFIX. BullMQ's blocking connections must be separate clients.
   */
  redis: RedisClient;
  /** Hands creation jobs to the worker and waits for them: one Queue and QueueEvents. */
  creations: CreationClient;
}

/**
 * Everything request handling needs, built once per process by buildDeps() and handed to
 * createApp(). Route modules take their services from here and never build any; a new service
 * is one member here and one line in buildServices(), so main.ts and the tests wire it alike.
 */
export interface GatewayDeps extends GatewayClients {
  config: GatewayConfig;
  logger: Logger;
  /** Looks the presented key up (auth.middleware.ts's authenticate), secret or publishable. */
  keys: KeysRepository;
  apps: AppsService;
  links: LinksService;
  /** Click analytics of a link and of the app (the rollups the redirect and worker keep). */
  analytics: AnalyticsService;
  /** Webhook endpoints (secrets sealed with WEBHOOK_ENCRYPTION_KEY) and their deliveries. */
  webhooks: WebhooksService;
  linkSubmission: LinkSubmissionService;
  /** The Idempotency-Key records of the creation endpoints (docs/decisions.md). */
  idempotency: IdempotencyService;
  /** CREATION_LIMIT_PER_HOUR per app, on `redis`. */
  creationLimiter: CreationLimiter;
  /** The app interface's POST /sdk/resolve. */
  resolve: ResolveService;
  /** SDK_RATE_LIMIT_PER_MINUTE per publishable key and client address, on `redis`. */
  sdkLimiter: SdkLimiter;
  /** The app interface's install reports and erasures. */
  installs: InstallsService;
  /** Signs erasure receipts with RECEIPT_SIGNING_KEY; its JWKS is served for verifying them. */
  receipts: ReceiptSigner;
  /** The process' Prometheus metrics; run-gateway.ts serves them on METRICS_PORT. */
  metrics: GatewayMetrics;
}

export type GatewayResources = Resources<GatewayDeps>;

/** Every repository and service, over the given clients. */
function buildServices(
  config: GatewayConfig,
  logger: Logger,
  clients: GatewayClients,
  reads: ReplicaReads,
): GatewayDeps {
  const { db, redis, creations } = clients;
  const readYourWrites = new ReadYourWrites(
    reads,
    new WriteFences(redis, config.REDIS_PREFIX, FENCE_TTL_SECONDS),
  );
  const creationLimiter = new CreationLimiter({
    redis,
    redisPrefix: config.REDIS_PREFIX,
    limitPerHour: config.CREATION_LIMIT_PER_HOUR,
  });
  const metrics = new GatewayMetrics();
  reads.observe(new ReplicaReadMetrics(metrics.registry, () => reads.lagSeconds).read);
  const receipts = new ReceiptSigner(
    config.RECEIPT_SIGNING_KEY,
    config.RECEIPT_PREVIOUS_PUBLIC_KEYS,
  );
  return {
    ...clients,
    config,
    logger,
    keys: new KeysRepository(db),
    apps: new AppsService(config.LINK_DOMAIN),
    links: new LinksService(
      new LinksRepository(db, { reads }),
      config.LINK_DOMAIN,
      new LinkCache(redis, config.REDIS_PREFIX),
      readYourWrites,
    ),
    analytics: new AnalyticsService(new AnalyticsRepository(reads), config.LINK_DOMAIN),
    webhooks: new WebhooksService(new WebhooksRepository(db), {
      secrets: secretBoxOf(config),
      addresses: addressPolicyOf(config),
    }),
    linkSubmission: new LinkSubmissionService({
      creations,
      creationLimiter,
      creationTimeoutMs: config.CREATION_TIMEOUT_MS,
      logger,
      onUnavailable: (reason) => {
        metrics.creationUnavailable(reason);
      },
      onCommitted: (scope) => readYourWrites.written(scope),
    }),
    idempotency: new IdempotencyService({
      keys: new IdempotencyKeysRepository(db),
      requests: new CreationRequestsRepository(db),
      creationTimeoutMs: config.CREATION_TIMEOUT_MS,
      queryTimeoutMs: config.API_REQUEST_BUDGET_MS,
      logger,
    }),
    creationLimiter,
    resolve: new ResolveService(
      new ResolveRepository(db, reads),
      config.LINK_DOMAIN,
      readYourWrites,
    ),
    sdkLimiter: new SdkLimiter({
      redis,
      redisPrefix: config.REDIS_PREFIX,
      limitPerMinute: config.SDK_RATE_LIMIT_PER_MINUTE,
    }),
    installs: new InstallsService(
      new InstallsRepository(db),
      new ClickTokenStore(redis, config.REDIS_PREFIX),
      receipts,
      { linkDomain: config.LINK_DOMAIN, clickTokenTtlMs: config.CLICK_TOKEN_TTL_SECONDS * 1000 },
      logger,
    ),
    receipts,
    metrics,
  };
}

/** The gateway's composition root: opens its clients, then builds every service over them. */
export function buildDeps(
  config: GatewayConfig,
  logger: Logger,
  options: BuildOptions<GatewayClients> = {},
): GatewayResources {
  const postgres = createPostgres(config, { applicationName: 'linkservice-gateway', logger });
  // A command fails after one reconnect attempt, or after REDIS_COMMAND_TIMEOUT_MS when Redis
  // does not answer (frozen, blackholed): the request answers 503 instead of waiting.
  const redis = createRedisClient(config, {
    connectionName: 'linkservice-gateway',
    logger,
    maxRetriesPerRequest: 1,
    commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
  });
  const creations = createCreationClient({
    redis: config,
    prefix: config.REDIS_PREFIX,
    requests: new CreationRequestsRepository(postgres.db),
    logger,
    groupsInFlight: config.CREATION_GROUPS_IN_FLIGHT,
    groupWaitMs: config.CREATION_GROUP_WAIT_MS,
  });
  const replica = openReadReplica(config, {
    applicationName: 'linkservice-gateway',
    logger,
  });
  const opened: GatewayClients = { db: postgres.db, redis, creations };
  const clients = options.clients ? options.clients(opened) : opened;

  let closing: Promise<void> | undefined;
  return {
    // GET by id, lists and resolve read on DATABASE_READ_URL's replica under the read-your-writes
    // rules (libs/db replica-reads.ts), else on `db`.
    deps: buildServices(config, logger, clients, replica.readsOver(clients.db)),
    // A creation needs all three: the limiter's Redis, the queue and its events, then Postgres.
    dependencies: {
      postgres: () => pingDatabase(postgres.db),
      redis: () => redis.ping(),
      'creation queue': () => creations.waitUntilReady(),
    },
    // What was opened here, whatever a test swapped in.
    close: () =>
      (closing ??= (async () => {
        await creations.close();
        await closeRedis(redis);
        await replica.close();
        await postgres.close();
      })()),
  };
}
