import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import { pingDatabase } from '@linkservice/db';
import type { Resources } from '@linkservice/lifecycle';
import { closeRedis, createPostgres, createRedisClient } from '@linkservice/lifecycle';
import { LinkCache } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import { ClickCounter } from './clicks/click-counter';
import { ClickFlusher } from './clicks/click-flusher';
import { clickKeys } from './clicks/click-keys';
import type { RedirectConfig } from './config';
import { RedirectService } from './links/redirect.service';
import { RedirectMetrics } from './metrics';
import { RedisBackoff } from './redis-backoff';

/**
 * After a Redis call of a redirect timed out, redirects skip Redis this long (resolving from
 * Postgres), then try it again: a frozen Redis costs one command timeout per second at most.
 */
const REDIS_BACKOFF_MS = 1_000;

/**
 * What request handling needs; built once by buildDeps() (the redirect's composition root) and
 * handed to createApp(), which builds nothing itself.
 */
export interface RedirectDeps {
  config: Pick<RedirectConfig, 'LINK_DOMAIN' | 'TRUST_FORWARDED_HOST'>;
  logger: Logger;
  db: Kysely<Database>;
  redis: Redis;
  /** Resolves aliases and counts the clicks of redirects. */
  redirects: RedirectService;
  /** The process' Prometheus metrics; main.ts serves them on METRICS_PORT. */
  metrics: RedirectMetrics;
}

export interface RedirectResources extends Resources<RedirectDeps> {
  flusher: ClickFlusher;
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

export function buildDeps(config: RedirectConfig, logger: Logger): RedirectResources {
  const postgres = createPostgres(config, { applicationName: 'linkservice-redirect', logger });
  const redis = createRedisClient(config.REDIS_URL, {
    connectionName: 'linkservice-redirect',
    logger,
    // A redirect must never wait for Redis to come back: while it is disconnected commands
    // fail at once (no offline queue) and a hung one gives up after REDIS_COMMAND_TIMEOUT_MS;
    // the service then falls back (Postgres for resolution, memory for the click) and skips
    // Redis for REDIS_BACKOFF_MS. Reconnection goes on meanwhile. A timed-out command stays on
    // its connection and may run late: counting is idempotent per click token, so that is
    // harmless (see ClickCounter).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS,
    // No auto-pipelining: it keeps one pipeline in flight and queues every other command behind
    // it. Measured at 10 connections: 0.063 -> 0.040 ms CPU per redirect and ~1.5x the
    // redirects/s without it. LinkCache batches the lookups of one event-loop turn itself.
    enableAutoPipelining: false,
  });

  const cache = new LinkCache(redis, config.REDIS_PREFIX, {
    positiveSeconds: config.LINK_CACHE_TTL_SECONDS,
    negativeSeconds: config.LINK_CACHE_NEGATIVE_TTL_SECONDS,
  });
  const keys = clickKeys(config.REDIS_PREFIX);
  const clicks = new ClickCounter({
    redis,
    keys,
    redisPrefix: config.REDIS_PREFIX,
    tokenTtlMs: config.CLICK_TOKEN_TTL_SECONDS * 1000,
    logger,
    backoff: new RedisBackoff(REDIS_BACKOFF_MS),
  });
  const flusher = new ClickFlusher({
    redis,
    db: postgres.db,
    keys,
    counter: clicks,
    logger,
    intervalMs: config.CLICK_FLUSH_INTERVAL_MS,
    recoverAfterMs: config.CLICK_RECOVERY_AFTER_MS,
  });
  const metrics = new RedirectMetrics();
  metrics.watchClicks(clicks, flusher);
  const redirects = new RedirectService(
    postgres.db,
    cache,
    clicks,
    config.REDIS_PREFIX,
    logger,
    config.DATABASE_QUERY_TIMEOUT_MS,
    metrics.cache,
  );

  let closing: Promise<void> | undefined;
  return {
    deps: { config, logger, db: postgres.db, redis, redirects, metrics },
    // Redirects would fall back to Postgres without Redis, but a cold start should not: every
    // click of a fallback waits in memory, and every lookup costs a query.
    dependencies: {
      postgres: () => pingDatabase(postgres.db),
      redis: () => redis.ping(),
    },
    flusher,
    clicks,
    startFlushing: () => {
      if (redis.status === 'ready') flusher.start();
      else
        redis.once('ready', () => {
          flusher.start();
        });
    },
    close: () =>
      (closing ??= (async () => {
        await flusher.stop();
        await closeRedis(redis);
        await postgres.close();
      })()),
  };
}
