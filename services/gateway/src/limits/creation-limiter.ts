import DataLoader from 'dataloader';
import type { RedisClient } from '@linkservice/lifecycle';
import type { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { fixedWindowLimiter, overLimitResult } from './fixed-window';
import { retryAfterSeconds } from './retry-after';

/** What the RateLimit-* headers of a creation response report. */
export interface CreationLimitState {
  limit: number;
  remaining: number;
  /** Whole seconds until the current window ends (the full window when none has started). */
  resetSeconds: number;
}

export interface CreationReservation extends CreationLimitState {
  /** Units actually reserved: between 0 and the number asked for. */
  granted: number;
}

export interface CreationLimiterOptions {
  redis: RedisClient;
  /** REDIS_PREFIX: every key of this stack lives under it. */
  redisPrefix: string;
  limitPerHour: number;
  /** One hour in production; tests shorten it to see a window end. */
  windowSeconds?: number;
}

const HOUR_SECONDS = 3600;

/** One request's reservation, as it waits for the rest of its event-loop turn. */
interface Wanted {
  appId: string;
  units: number;
}

/**
 * The library's increment script, with one change: a counter that falls to zero or below is
 * deleted. Units come back when a reservation was not used, so a zero counter means nothing was
 * created in this window, and the next creation must open a fresh window ("a fixed window that
 * starts with the first creation"). It also stops a release that arrives after its window expired
 * from opening a new window with a negative count, which would grant more than the limit.
 * ARGV[1] = points (negative to give back), ARGV[2] = window seconds.
 */
const INCREMENT_OR_DROP_SCRIPT = `
redis.call('set', KEYS[1], 0, 'EX', ARGV[2], 'NX')
local consumed = redis.call('incrby', KEYS[1], ARGV[1])
if consumed <= 0 then
  redis.call('del', KEYS[1])
  return {0, -1}
end
local ttl = redis.call('pttl', KEYS[1])
if ttl == -1 then
  redis.call('expire', KEYS[1], ARGV[2])
  ttl = 1000 * ARGV[2]
end
return {consumed, ttl}
`;

/**
 * The hourly creation limit per app (live and test share it). Callers reserve units before
 * creating and release the ones that did not become links, so only created links use it up.
 * Every reservation is one atomic INCRBY, so concurrent reservations can briefly overshoot but
 * never grant more than the limit in total: each keeps only the part below the limit it saw.
 *
 * The reservations asked for in one event-loop turn are made together, one INCRBY per app
 * (DataLoader, nothing cached: setImmediate runs once the turn's I/O callbacks are done). What
 * fits is granted in the order they were asked, and every one of them reports the window as
 * that INCRBY left it, as if they had been made at one instant. A lone request waits for nothing.
 */
export class CreationLimiter {
  readonly limit: number;
  private readonly windowSeconds: number;
  private readonly limiter: RateLimiterRedis;
  private readonly reservations: DataLoader<Wanted, CreationReservation>;

  constructor({
    redis,
    redisPrefix,
    limitPerHour,
    windowSeconds = HOUR_SECONDS,
  }: CreationLimiterOptions) {
    this.limit = limitPerHour;
    this.windowSeconds = windowSeconds;
    this.limiter = fixedWindowLimiter({
      redis,
      redisPrefix,
      name: 'creation-limit',
      points: limitPerHour,
      windowSeconds,
      incrementScript: INCREMENT_OR_DROP_SCRIPT,
    });
    this.reservations = new DataLoader((asked) => this.reserveTogether(asked), {
      cache: false,
      batchScheduleFn: (dispatch) => setImmediate(dispatch),
    });
  }

  /** Reserves up to `wanted` units; whatever did not fit under the limit is given back at once. */
  reserve(appId: string, wanted: number): Promise<CreationReservation> {
    if (!Number.isInteger(wanted) || wanted < 1) {
      return Promise.reject(new RangeError(`reserve wants a positive integer, got ${wanted}`));
    }
    return this.reservations.load({ appId, units: wanted });
  }

  /** One turn's reservations, app by app; a failed call fails that app's reservations only. */
  private async reserveTogether(
    asked: readonly Wanted[],
  ): Promise<(CreationReservation | Error)[]> {
    const byApp = new Map<string, number[]>();
    asked.forEach(({ appId }, index) => {
      const indices = byApp.get(appId);
      if (indices) indices.push(index);
      else byApp.set(appId, [index]);
    });
    const answers: (CreationReservation | Error)[] = [];
    await Promise.all(
      [...byApp].map(async ([appId, indices]) => {
        try {
          const made = await this.reserveForApp(
            appId,
            indices.map((index) => asked[index].units),
          );
          indices.forEach((index, n) => (answers[index] = made[n]));
        } catch (error) {
          const failure = error instanceof Error ? error : new Error(String(error));
          for (const index of indices) answers[index] = failure;
        }
      }),
    );
    return answers;
  }

  /** One INCRBY for all of `sizes`; the part past the limit is given back in one more. */
  private async reserveForApp(appId: string, sizes: number[]): Promise<CreationReservation[]> {
    const wanted = sizes.reduce((sum, size) => sum + size, 0);
    const after = await this.limiter.consume(appId, wanted).catch(overLimitResult);
    const overshoot = Math.max(after.consumedPoints - this.limit, 0);
    const fitting = Math.max(wanted - overshoot, 0);
    const excess = wanted - fitting;
    let fits = fitting;
    const grants = sizes.map((size) => {
      const granted = Math.min(size, fits);
      fits -= granted;
      return granted;
    });
    const state = this.stateFrom(excess === 0 ? after : await this.limiter.reward(appId, excess));
    return grants.map((granted) => ({ granted, ...state }));
  }

  /** Gives back units that were reserved but did not become links. */
  async release(appId: string, units: number): Promise<CreationLimitState> {
    if (units <= 0) return this.state(appId);
    return this.stateFrom(await this.limiter.reward(appId, units));
  }

  /** The current window, read without using anything up. */
  async state(appId: string): Promise<CreationLimitState> {
    const current = await this.limiter.get(appId);
    return current ? this.stateFrom(current) : this.freshWindow();
  }

  private stateFrom(res: RateLimiterRes): CreationLimitState {
    // A dropped counter (see the script) reports msBeforeNext -1: no window is open.
    if (res.consumedPoints <= 0 || res.msBeforeNext < 0) return this.freshWindow();
    return {
      limit: this.limit,
      remaining: Math.max(this.limit - res.consumedPoints, 0),
      resetSeconds: retryAfterSeconds(res.msBeforeNext),
    };
  }

  /** The state of a window nobody has used: for answers that must not wait on Redis. */
  unusedWindow(): CreationLimitState {
    return this.freshWindow();
  }

  private freshWindow(): CreationLimitState {
    return { limit: this.limit, remaining: this.limit, resetSeconds: this.windowSeconds };
  }
}
