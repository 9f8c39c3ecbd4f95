import type { Redis } from 'ioredis';
import {
  RedisScript,
  callRedis,
  clickTokenKey,
  clickTokenValue,
  redisFailureOf,
} from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { ClickKeys } from './click-keys';
import { RedisBackoff } from '../redis-backoff';
import { throttled } from '../throttled';

/**
 * At most this many click tokens wait in memory for Redis (about 100 bytes each): during a long
 * outage the oldest are dropped, while the clicks themselves are still counted.
 */
const MAX_UNTOKENED = 100_000;
/** Tokens handed back to Redis per round trip once it answers again. */
const UNTOKENED_PER_PIPELINE = 1_000;
/**
 * At most this many uncertain clicks wait in memory for Redis (about 100 bytes each); beyond
 * it the oldest are dropped (and counted in `clicksDropped`).
 */
const MAX_UNCERTAIN = 100_000;
/** Uncertain clicks reconciled per script call. */
const UNCERTAIN_PER_CALL = 1_000;
/** How long requests skip Redis after an uncertain failure, unless options say otherwise. */
const DEFAULT_BACKOFF_MS = 1_000;
/** Drop-warnings at most this often; each carries the running total. */
const DROP_WARNING_INTERVAL_MS = 10_000;

/** One counted click and the token minted with it. */
export interface CountedClick {
  linkId: string;
  /** SHA-256 of the click token, base64url (see click-token.ts). */
  tokenHash: string;
  /** The request's clock, epoch ms. */
  at: number;
}

export interface ClickCounterOptions {
  redis: Redis;
  keys: ClickKeys;
  /** REDIS_PREFIX: click tokens are stored under it (`clickTokenKey`). */
  redisPrefix: string;
  /** CLICK_TOKEN_TTL_SECONDS, in ms: a token's key expires this long after its click. */
  tokenTtlMs: number;
  logger: Logger;
  /** At most this many tokens wait in memory for Redis; MAX_UNTOKENED unless a test says. */
  maxUntokened?: number;
  /** At most this many uncertain clicks wait in memory; MAX_UNCERTAIN unless a test says. */
  maxUncertain?: number;
  /**
   * When the request path skips Redis; shared with RedirectService, so a timeout of either
   * spares the other. A backoff of DEFAULT_BACKOFF_MS of its own unless given.
   */
  backoff?: RedisBackoff;
}

/**
 * Counts clicks idempotently per token (the token is the click's idempotency key): sets the
 * token's key only if it does not exist (NX) and counts the click only when it was set, so a
 * call that runs twice (resent after a reconnect, or run late after a timeout) or a
 * reconciliation of a click counted meanwhile counts nothing. A key already there may also be
 * a used-up token's tombstone (ClickTokenStore.forget): a click counted that late counts
 * nothing either.
 *
 * Skips a click that could double-count after its token expired: a call that runs once the
 * click's token (had it been stored by an earlier execution) may have expired, that is at or
 * after `at + ttl - margin` by Redis' clock, counts nothing and answers -1 for it. `margin`
 * covers the clock difference between this service and Redis.
 *
 * KEYS: the pending hash. ARGV: the token key prefix, the token TTL (ms), the margin (ms), then
 * (link id, token hash, click time ms) per click. Replies per click: 1 counted, 0 counted
 * before (or a tombstone), -1 too late.
 */
const COUNT_CLICKS = `
redis.replicate_commands()
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local tokenPrefix, tokenTtl, margin = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local replies = {}
for i = 1, (#ARGV - 3) / 3 do
  local linkId, tokenHash, at = ARGV[i * 3 + 1], ARGV[i * 3 + 2], ARGV[i * 3 + 3]
  local left = tonumber(at) + tokenTtl - now
  if left <= margin then
    replies[i] = -1
  elseif redis.call('SET', tokenPrefix .. tokenHash, linkId .. ' ' .. at, 'PX', left, 'NX') then
    redis.call('HINCRBY', KEYS[1], linkId, 1)
    replies[i] = 1
  else
    replies[i] = 0
  end
end
return replies`;
const countClicksScript = new RedisScript(COUNT_CLICKS);

/** Why clicks were dropped, for the warning that counts them. */
type DropReason = 'token expired before Redis answered' | 'too many waited' | 'shutdown';

/**
 * Counts a redirect's click on the request path in the shared pending hash, never with a
 * database write, and stores the click token minted with it: on a cache hit the link cache's
 * lookup script does both in the same round trip; otherwise `record` does both in one script
 * call (COUNT_CLICKS). Both are idempotent per token, so a click is counted at most once.
 *
 * When Redis cannot take a click, what happens depends on whether the failed call was sent:
 * - certainly not sent (Redis disconnected, or skipped during a backoff): nothing was counted;
 *   the click is counted in memory, the flusher writes it to Postgres itself and hands its token
 *   to Redis once it answers (while the token is still within its time);
 * - uncertain (a timeout, a connection lost in flight: the call may have run, or may run late):
 *   the click waits in memory (`uncertain`) and the flusher reconciles it with the same
 *   idempotent script once Redis answers: counted exactly once whether or not the first call
 *   ran. It is never written to Postgres (that could count it twice). If it cannot be
 *   reconciled before its token would expire, waits at shutdown, or exceeds the memory cap, it
 *   is dropped: counted in `clicksDropped` and a `clicks_dropped` warning, not silently.
 */
export class ClickCounter {
  private unrecorded = new Map<string, number>();
  private untokened: CountedClick[] = [];
  private uncertain: CountedClick[] = [];
  /** Tokens dropped because too many waited for Redis (logged by storeUntokened). */
  private dropped = 0;
  private droppedClicks = 0;
  private readonly warn: (message: string, error: unknown) => void;
  /** The total the last `clicks_dropped` warning carried, and when it went out. */
  private reportedDropped = 0;
  private lastDropReport = -Infinity;
  private lastDropReason: DropReason | undefined;
  /** When the request path skips Redis (see RedisBackoff). */
  readonly backoff: RedisBackoff;

  constructor(private readonly options: ClickCounterOptions) {
    this.backoff = options.backoff ?? new RedisBackoff(DEFAULT_BACKOFF_MS);
    this.warn = throttled(10_000, (message, error) => {
      options.logger.warn({ err: error }, message);
    });
  }

  /** The hash a click is counted in (link id -> clicks). */
  get pendingKey(): string {
    return this.options.keys.pending;
  }

  /** How long a click token is kept (the lookup script's `click.tokenTtlMs`). */
  get tokenTtlMs(): number {
    return this.options.tokenTtlMs;
  }

  /**
   * How long before a click's token would expire its reconciliation is given up (see
   * COUNT_CLICKS): a tenth of the TTL, at most 10 s; generous beside clock differences.
   */
  get reconcileMarginMs(): number {
    return Math.min(10_000, Math.floor(this.options.tokenTtlMs / 10));
  }

  /**
   * Clicks dropped since start because it was uncertain whether Redis counted them and they
   * could not be reconciled in time (for a `clicks_dropped` metric).
   */
  get clicksDropped(): number {
    return this.droppedClicks;
  }

  /** Uncertain clicks waiting for Redis (reconcileUncertain). */
  get uncertainCount(): number {
    return this.uncertain.length;
  }

  /** Where a click token is stored, and for how long. */
  private tokenTarget(tokenHash: string): { key: string; ttlMs: number } {
    return {
      key: clickTokenKey(this.options.redisPrefix, tokenHash),
      ttlMs: this.options.tokenTtlMs,
    };
  }

  /**
   * Counts a click that no Redis call has counted yet (a miss, or a lookup that was certainly
   * not sent): in Redis, one round trip, or in memory when Redis cannot take it (see the class).
   */
  async record(click: CountedClick): Promise<void> {
    if (!this.backoff.allows()) {
      this.countInMemory(click);
      return;
    }
    try {
      // Too late only with a clock far off Redis': the click is dropped, never counted twice.
      if ((await this.countInRedis([click])) > 0)
        this.drop(1, 'token expired before Redis answered');
    } catch (error) {
      if (redisFailureOf(error) === 'not-sent') {
        this.countInMemory(click);
        this.warn('could not count a click in Redis; counting it in memory', error);
      } else {
        this.backoff.trip();
        this.addUncertain(click);
        this.warn('a click may or may not have reached Redis; reconciling it later', error);
      }
    }
  }

  /**
   * A click whose Redis call failed uncertainly (it may have been counted, or may still be):
   * waits for the flusher to reconcile it (`reconcileUncertain`). No Redis call of its own.
   */
  addUncertain(click: CountedClick): void {
    this.uncertain.push(click);
    const max = this.options.maxUncertain ?? MAX_UNCERTAIN;
    if (this.uncertain.length > max) {
      // The oldest go first (they are the closest to expiry), a tenth at a time.
      const excess = this.uncertain.length - Math.floor(max * 0.9);
      this.uncertain.splice(0, excess);
      this.drop(excess, 'too many waited');
    }
  }

  /**
   * Counts uncertain clicks with the idempotent script, in calls of UNCERTAIN_PER_CALL: each is
   * then counted exactly once, whether or not its first call ran. Clicks whose token would
   * expire before Redis could run the call are dropped (`clicksDropped`); those of a call that
   * fails stay for the next pass (a call that fails uncertainly and runs later is harmless: the
   * retry counts nothing more). Resolves with how many are still waiting.
   */
  async reconcileUncertain(now = Date.now()): Promise<number> {
    const deadline = now - this.options.tokenTtlMs + this.reconcileMarginMs;
    const late = this.uncertain.filter((click) => click.at <= deadline).length;
    if (late > 0) {
      this.uncertain = this.uncertain.filter((click) => click.at > deadline);
      this.drop(late, 'token expired before Redis answered');
    }
    while (this.uncertain.length > 0) {
      const chunk = this.uncertain.slice(0, UNCERTAIN_PER_CALL);
      let tooLate: number;
      try {
        tooLate = await this.countInRedis(chunk);
      } catch {
        break;
      }
      // Clicks added meanwhile (and any the cap dropped) leave the chunk alone: remove by identity.
      const done = new Set(chunk);
      this.uncertain = this.uncertain.filter((click) => !done.has(click));
      if (tooLate > 0) this.drop(tooLate, 'token expired before Redis answered');
    }
    return this.uncertain.length;
  }

  /**
   * Drops every uncertain click still waiting (a stopping process cannot reconcile them later);
   * each is counted in `clicksDropped` and logged. Resolves with how many were dropped.
   */
  dropUncertain(): number {
    const count = this.uncertain.length;
    this.uncertain = [];
    this.droppedClicks += count;
    if (this.droppedClicks > this.reportedDropped) {
      // The last word: every drop not yet in a warning, whatever the interval.
      this.options.logger.warn(
        {
          clicks_dropped: this.droppedClicks,
          clicks: this.droppedClicks - this.reportedDropped,
          reason: count > 0 ? 'shutdown' : this.lastDropReason,
        },
        'clicks dropped: uncertain whether Redis counted them, and too late to reconcile',
      );
      this.reportedDropped = this.droppedClicks;
    }
    return count;
  }

  /** One COUNT_CLICKS call; resolves with how many were too late, rejects with RedisCallError. */
  private async countInRedis(clicks: readonly CountedClick[]): Promise<number> {
    const { redis, keys, redisPrefix, tokenTtlMs } = this.options;
    const args: (string | number)[] = [
      clickTokenKey(redisPrefix, ''),
      tokenTtlMs,
      this.reconcileMarginMs,
    ];
    for (const click of clicks) args.push(click.linkId, click.tokenHash, click.at);
    const replies = await callRedis(redis, () =>
      countClicksScript.run(redis, 1, [keys.pending, ...args]),
    );
    return Array.isArray(replies) ? replies.filter((reply) => reply === -1).length : 0;
  }

  private drop(count: number, reason: DropReason): void {
    this.droppedClicks += count;
    this.lastDropReason = reason;
    this.reportDrops();
  }

  /**
   * Logs the `clicks_dropped` total when it grew since the last warning, at most once per
   * DROP_WARNING_INTERVAL_MS. Called on every drop and by every flusher pass, so drops that
   * came inside a window are reported once it ends, never left unlogged.
   */
  reportDrops(now = Date.now()): void {
    if (this.droppedClicks === this.reportedDropped) return;
    if (now - this.lastDropReport < DROP_WARNING_INTERVAL_MS) return;
    this.options.logger.warn(
      {
        clicks_dropped: this.droppedClicks,
        clicks: this.droppedClicks - this.reportedDropped,
        reason: this.lastDropReason,
      },
      'clicks dropped: uncertain whether Redis counted them, and too late to reconcile',
    );
    this.reportedDropped = this.droppedClicks;
    this.lastDropReport = now;
  }

  private countInMemory(click: CountedClick): void {
    this.unrecorded.set(click.linkId, (this.unrecorded.get(click.linkId) ?? 0) + 1);
    this.untokened.push(click);
    const max = this.options.maxUntokened ?? MAX_UNTOKENED;
    if (this.untokened.length > max) {
      // A long outage: the oldest tokens go first (they expire first anyway), a tenth at a
      // time so that dropping stays cheap; the clicks themselves are all still counted.
      const excess = this.untokened.length - Math.floor(max * 0.9);
      this.untokened.splice(0, excess);
      this.dropped += excess;
    }
  }

  /** Clicks Redis never took, not yet handed to the flusher (takeUnrecorded). */
  get unrecordedCount(): number {
    let count = 0;
    for (const clicks of this.unrecorded.values()) count += clicks;
    return count;
  }

  /** Click tokens waiting for Redis (storeUntokened). */
  get untokenedCount(): number {
    return this.untokened.length;
  }

  /** Hands the in-memory clicks to the flusher and starts afresh. */
  takeUnrecorded(): Map<string, number> {
    const taken = this.unrecorded;
    this.unrecorded = new Map();
    return taken;
  }

  /**
   * Stores the tokens Redis could not take when their clicks were counted, with what is left of
   * their time; expired ones are dropped. Those Redis still refuses stay for the next call.
   * Resolves with how many are still waiting.
   */
  async storeUntokened(now = Date.now()): Promise<number> {
    if (this.dropped > 0) {
      this.options.logger.warn(
        { tokens: this.dropped },
        'click tokens dropped: too many waited for Redis',
      );
      this.dropped = 0;
    }
    this.untokened = this.untokened.filter((click) => click.at + this.options.tokenTtlMs > now);
    const { redis } = this.options;
    // Not connected: no pipeline is built for it to refuse; the next pass tries again.
    if (redis.status !== 'ready') return this.untokened.length;
    while (this.untokened.length > 0) {
      const chunk = this.untokened.slice(0, UNTOKENED_PER_PIPELINE);
      const pipeline = redis.pipeline();
      for (const click of chunk) {
        const token = this.tokenTarget(click.tokenHash);
        const value = clickTokenValue({ linkId: click.linkId, clickedAt: click.at });
        // NX: nothing else stores these tokens, but never overwrite what is there (a tombstone).
        pipeline.set(token.key, value, 'PX', click.at + token.ttlMs - now, 'NX');
      }
      const results = await pipeline.exec().catch(() => null);
      const refused = chunk.filter((_click, index) => results?.[index]?.[0] !== null);
      // Tokens minted meanwhile were appended behind the chunk: the oldest stay first.
      this.untokened = [...refused, ...this.untokened.slice(chunk.length)];
      if (refused.length > 0) break;
    }
    return this.untokened.length;
  }
}
