import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import { FENCE_TTL_SECONDS, pingDatabase, ReadYourWrites, WriteFences } from '@linkservice/db';
import type { BuildOptions, RedisClient, Resources } from '@linkservice/lifecycle';
import {
  closeRedis,
  createPostgres,
  createRedisClient,
  openReadReplica,
} from '@linkservice/lifecycle';
import { ReplicaReadMetrics } from '@linkservice/metrics';
import { LinkCache } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import { AssociationFilesRepository } from './associations/association-files.repository';
import { ClickBatchesRepository } from './clicks/click-batches.repository';
import { ClickCounter } from './clicks/click-counter';
import { ClickFlusher } from './clicks/click-flusher';
import { CountingLookups } from './clicks/counting-lookups';
import type { RedirectConfig } from './config';
import { LinkResolutionRepository } from './links/link-resolution.repository';
import { RedirectService } from './links/redirect.service';
import { RedirectMetrics } from './metrics';
import { RedisBackoff } from './redis-backoff';
import { ClickAnalytics } from './analytics/click-analytics';
import { CountryLookup } from './analytics/countries';
import { UserAgentClassifier } from './analytics/user-agent-families';
import { VisitorSalts } from './analytics/visitor-salts';
import { pingOnceConnected } from './redis-calls';

/**
 * After a Redis call of a redirect timed out, redirects skip Redis this long (resolving from
 * Postgres), then try it again: a frozen Redis costs one command timeout per second at most.
 */
const REDIS_BACKOFF_MS = 1_000;

/** The clients a redirect process opens; what a test may swap (e.g. a Redis behind a proxy). */
export interface RedirectClients {
  db: Kysely<Database>;
  redis: RedisClient;
}

/**
 * What request handling needs; built once by buildDeps() (the redirect's composition root) and
 * handed to createApp(), which builds nothing itself.
 */
export interface RedirectDeps extends RedirectClients {
  config: Pick<
    RedirectConfig,
    'LINK_DOMAIN' | 'TRUST_FORWARDED_HOST' | 'TRUST_FORWARDED_FOR' | 'GEO_COUNTRY_HEADER'
  >;
  logger: Logger;
  /** Resolves aliases and counts the clicks of redirects. */
  redirects: RedirectService;
  /** What the association files are built from. */
  associations: AssociationFilesRepository;
  /** The process' Prometheus metrics; main.ts serves them on METRICS_PORT. */
  metrics: RedirectMetrics;
}

export interface RedirectResources extends Resources<RedirectDeps> {
  flusher: ClickFlusher;
  /** The daily salts of unique visitors; null with ANALYTICS_ENABLED=false. */
  salts: VisitorSalts | null;
  /**
   * Counts clicks and stores their click tokens (what waits in memory while Redis is away: clicks
   * for Postgres, uncertain clicks to reconcile, and `clicksDropped`).
   */
  clicks: ClickCounter;
  /**
   * Applies leftover click batches (a crash, a dead replica), then flushes every interval.
   * Redis commands fail until it is connected (no offline queue), so this begins once it is.
   */
  startFlushing(): void;
  /**
   * Stops the flusher (a final flush, quick when main's stop has just flushed), then closes Redis
   * and the pool. Safe to call twice.
   */
  close(): Promise<void>;
}

/**
 * The redirect's composition root: opens its clients, then builds every service over them.
 * `options.shutdown` is unused: closing disconnects a client that is still reconnecting.
 */
export function buildDeps(
  config: RedirectConfig,
  logger: Logger,
  options: BuildOptions<RedirectClients> = {},
): RedirectResources {
  const postgres = createPostgres(config, { applicationName: 'linkservice-redirect', logger });
  const replica = openReadReplica(config, {
    applicationName: 'linkservice-redirect',
    logger,
  });
  const opened: RedirectClients = {
    db: postgres.db,
    redis: createRedisClient(config, {
      connectionName: 'linkservice-redirect',
      logger,
      // A redirect must never wait for Redis to come back: while it is disconnected commands
      // fail at once (no offline queue) and a hung one gives up after REDIS_COMMAND_TIMEOUT_MS;
      // the service then falls back (Postgres for resolution, memory for the click) and skips
      // Redis for REDIS_BACKOFF_MS. Reconnection goes on meanwhile. A timed-out command stays on
      // its connection and may run late: counting is idempotent per click token, so that is
      // harmless (see COUNT_CLICK_LUA).
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
      // No auto-pipelining: it keeps one pipeline in flight and queues every other command
      // behind it (measured: services/redirect/README.md). CountingLookups batches the lookups
      // of one event-loop turn itself.
      enableAutoPipelining: false,
    }),
  };
  const { db, redis } = options.clients ? options.clients(opened) : opened;
  // Cache misses read on DATABASE_READ_URL's replica under the read-your-writes rules (libs/db
  // replica-reads.ts), else on `db`.
  const reads = replica.readsOver(db);
  const readYourWrites = new ReadYourWrites(
    reads,
    new WriteFences(redis, config.REDIS_PREFIX, FENCE_TTL_SECONDS),
  );

  const cache = new LinkCache(redis, config.REDIS_PREFIX, {
    positiveSeconds: config.LINK_CACHE_TTL_SECONDS,
    negativeSeconds: config.LINK_CACHE_NEGATIVE_TTL_SECONDS,
  });
  const tokenTtlMs = config.CLICK_TOKEN_TTL_SECONDS * 1000;
  // One window for the lookups and the clicks: a timeout of either spares the other.
  const backoff = new RedisBackoff(REDIS_BACKOFF_MS);
  const clicks = new ClickCounter({
    redis,
    redisPrefix: config.REDIS_PREFIX,
    tokenTtlMs,
    logger,
    backoff,
  });
  const flusher = new ClickFlusher({
    redis,
    batches: new ClickBatchesRepository(db),
    redisPrefix: config.REDIS_PREFIX,
    counter: clicks,
    logger,
    intervalMs: config.CLICK_FLUSH_INTERVAL_MS,
    recoverAfterMs: config.CLICK_RECOVERY_AFTER_MS,
  });
  const metrics = new RedirectMetrics();
  metrics.watchClicks(clicks, flusher);
  const salts = config.ANALYTICS_ENABLED
    ? new VisitorSalts({ redis, redisPrefix: config.REDIS_PREFIX, logger })
    : null;
  const analytics =
    salts === null
      ? null
      : new ClickAnalytics({
          countries: new CountryLookup({
            databasePath: config.GEO_DATABASE_PATH,
            trustedHeader: config.GEO_COUNTRY_HEADER,
          }),
          userAgents: new UserAgentClassifier(),
          salts,
        });
  reads.observe(new ReplicaReadMetrics(metrics.registry, () => reads.lagSeconds).read);
  const redirects = new RedirectService({
    links: new LinkResolutionRepository(db, {
      reads,
      fenceOf: (scope) => readYourWrites.fenceFor(scope),
    }),
    cache,
    lookups: new CountingLookups({ redis, cache, redisPrefix: config.REDIS_PREFIX, tokenTtlMs }),
    clicks,
    backoff,
    redisPrefix: config.REDIS_PREFIX,
    logger,
    lookupBudgetMs: config.DATABASE_QUERY_TIMEOUT_MS,
    cacheStats: metrics.cache,
    analytics,
  });

  let closing: Promise<void> | undefined;
  return {
    deps: {
      config,
      logger,
      db,
      redis,
      redirects,
      associations: new AssociationFilesRepository(db),
      metrics,
    },
    // Redirects would fall back to Postgres without Redis, but a cold start should not: every
    // click of a fallback waits in memory, and every lookup costs a query. Without an offline
    // queue a PING sent while the client still connects fails ("Stream isn't writeable"): the
    // first connection is waited for, and only its failure is one.
    dependencies: {
      postgres: () => pingDatabase(db),
      redis: () => pingOnceConnected(redis),
    },
    flusher,
    salts,
    clicks,
    startFlushing: () => {
      const start = () => {
        flusher.start();
        salts?.start();
      };
      if (redis.status === 'ready') start();
      else redis.once('ready', start);
    },
    // What was opened here, whatever a test swapped in.
    close: () =>
      (closing ??= (async () => {
        await flusher.stop();
        salts?.stop();
        await closeRedis(opened.redis);
        await replica.close();
        await postgres.close();
      })()),
  };
}
