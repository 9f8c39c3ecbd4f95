import { createHash } from 'node:crypto';
import type { RedisClient } from '@linkservice/lifecycle';
import type { RateLimiterRedis } from 'rate-limiter-flexible';
import { fixedWindowLimiter, overLimitResult } from './fixed-window';
import { retryAfterSeconds } from './retry-after';

export interface SdkLimiterOptions {
  redis: RedisClient;
  /** REDIS_PREFIX: every key of this stack lives under it. */
  redisPrefix: string;
  /** SDK_RATE_LIMIT_PER_MINUTE. */
  limitPerMinute: number;
}

export type SdkLimitVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

const MINUTE_SECONDS = 60;

/**
 * The Redis name of one budget: SHA-256 of the presented key's hash (itself SHA-256, so 32
 * bytes and the split is unambiguous) followed by the client address, so neither is stored as
 * such. Not a secret: a publishable key is public, and whoever has it and the Redis keys could
 * find an IPv4 address by trying them all (an HMAC with a deployment secret would prevent that).
 */
export function budgetKey(keyHash: Buffer, clientAddress: string): string {
  return createHash('sha256').update(keyHash).update(clientAddress, 'utf8').digest('base64url');
}

/**
 * The app interface's abuse limit (app-interface.md): SDK_RATE_LIMIT_PER_MINUTE requests per
 * publishable key and client address, every SDK endpoint drawing on the one budget. A fixed
 * window that starts with the budget's first request; one atomic INCR per request.
 */
export class SdkLimiter {
  readonly limit: number;
  private readonly limiter: RateLimiterRedis;

  constructor({ redis, redisPrefix, limitPerMinute }: SdkLimiterOptions) {
    this.limit = limitPerMinute;
    this.limiter = fixedWindowLimiter({
      redis,
      redisPrefix,
      name: 'sdk-limit',
      points: limitPerMinute,
      windowSeconds: MINUTE_SECONDS,
    });
  }

  /** Takes one request from the budget. Rejects when Redis does not answer. */
  async consume(keyHash: Buffer, clientAddress: string): Promise<SdkLimitVerdict> {
    try {
      await this.limiter.consume(budgetKey(keyHash, clientAddress));
      return { allowed: true };
    } catch (reason) {
      const counter = overLimitResult(reason);
      return { allowed: false, retryAfterSeconds: retryAfterSeconds(counter.msBeforeNext) };
    }
  }
}
