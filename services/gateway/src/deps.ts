import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import { closeRedis, createRedisClient } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import type { CreationClient } from '@linkservice/creation';
import { createCreationClient } from '@linkservice/creation';
import type { GatewayConfig } from './config';
import { CreationLimiter } from './limits/creation-limiter';

/**
 * Everything request handling needs, built once per process by buildDeps() and handed to
 * createApp(). Features add their own members here (e.g. the creation client and limiter) and
 * build them in buildDeps(), so main.ts and the tests wire the gateway identically.
 */
export interface GatewayDeps {
  config: GatewayConfig;
  logger: Logger;
  db: Kysely<Database>;
  /**
   * For plain commands (rate limits, readiness). Fails a command fast when Redis is away
   * instead of queueing it, so requests answer 503 rather than hang. Keys go under
   * config.REDIS_PREFIX. BullMQ's blocking connections must be separate clients.
   */
  redis: Redis;
  /** Hands creation jobs to the worker and waits for them: one Queue and QueueEvents. */
  creations: CreationClient;
  /** CREATION_LIMIT_PER_HOUR per app, on `redis`. */
  creationLimiter: CreationLimiter;
}

export interface GatewayResources {
  deps: GatewayDeps;
  /** Closes Redis clients, then the pool. Safe to call more than once. */
  close(): Promise<void>;
}

export function buildDeps(config: GatewayConfig, logger: Logger): GatewayResources {
  const postgres = createDb({
    connectionString: config.DATABASE_URL,
    max: config.DATABASE_POOL_SIZE,
    applicationName: 'linkservice-gateway',
    onConnectionError: (error) => {
      logger.warn({ err: error }, 'postgres connection lost');
    },
  });
  // A command fails after one reconnect attempt: the request answers 503 instead of waiting.
  const redis = createRedisClient(config.REDIS_URL, {
    connectionName: 'linkservice-gateway',
    logger,
    maxRetriesPerRequest: 1,
  });
  const creations = createCreationClient({
    redisUrl: config.REDIS_URL,
    prefix: config.REDIS_PREFIX,
    db: postgres.db,
    logger,
  });
  const creationLimiter = new CreationLimiter({
    redis,
    redisPrefix: config.REDIS_PREFIX,
    limitPerHour: config.CREATION_LIMIT_PER_HOUR,
  });

  let closing: Promise<void> | undefined;
  return {
    deps: { config, logger, db: postgres.db, redis, creations, creationLimiter },
    close: () =>
      (closing ??= (async () => {
        await creations.close();
        await closeRedis(redis);
        await postgres.close();
      })()),
  };
}
