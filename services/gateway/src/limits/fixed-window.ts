import type { RedisClient } from '@linkservice/lifecycle';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

export interface FixedWindowOptions {
  redis: RedisClient;
  /** REDIS_PREFIX: every key of this stack lives under it. */
  redisPrefix: string;
  /** The limit's own part of the key, after the prefix. */
  name: string;
  points: number;
  windowSeconds: number;
  /** Replaces the library's increment script (see CreationLimiter). */
  incrementScript?: string;
}

/**
 * A fixed-window counter in Redis, the kind both gateway limits use. With Redis gone it fails
 * now (the route answers 503) instead of queueing the command.
 */
export function fixedWindowLimiter({
  redis,
  redisPrefix,
  name,
  points,
  windowSeconds,
  incrementScript,
}: FixedWindowOptions): RateLimiterRedis {
  return new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${redisPrefix}:${name}`,
    points,
    duration: windowSeconds,
    ...(incrementScript === undefined ? {} : { customIncrTtlLuaScript: incrementScript }),
    rejectIfRedisNotReady: true,
  });
}

/** consume() rejects with the counter when it went past the limit and with an Error otherwise. */
export function overLimitResult(reason: unknown): RateLimiterRes {
  if (reason instanceof RateLimiterRes) return reason;
  throw reason;
}
