import type { RedisClient } from '@linkservice/lifecycle';
import {
  callGroups,
  clickTokenKey,
  clickTokenValue,
  pendingKeysByShard,
  shardOfTokenHash,
  visitorsKeyPrefix,
} from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { RedisBackoff } from '../redis-backoff';
import type { RedisFailure } from '../redis-calls';
import { RedisScript, callRedis, redisFailureOf } from '../redis-calls';
import { throttled } from '../throttled';
import type { Click } from './click-buffers';
import { UncertainClicks, UnrecordedClicks } from './click-buffers';
import { COUNT_CLICKS } from './click-scripts';
import { visitorsExpireAt } from '../analytics/visitor-salts';
import { visitorsField } from '../analytics/click-analytics';
import type { DropReason, DropReport } from './drop-ledger';
import { DropLedger } from './drop-ledger';

/**
 * At most this many click tokens wait in memory for Redis (about 100 bytes each): during a long
 * outage the oldest are dropped, while the clicks themselves are still counted.
 */
const MAX_UNTOKENED = 100_000;
/** Tokens handed back to Redis per round trip once it answers again. */
const TOKENS_PER_PIPELINE = 1_000;
/**
 * At most this many uncertain clicks wait in memory for Redis (about 100 bytes each); beyond
 * it the oldest are dropped (and counted in `clicksDropped`).
 */
const MAX_UNCERTAIN = 100_000;
/** Uncertain clicks reconciled per script call. */
const UNCERTAIN_PER_CALL = 1_000;
const countClicksScript = new RedisScript(COUNT_CLICKS);

/**
 * Where a click stands when the request hands it over: `counted` (its lookup counted it, on a
 * cache hit), `fresh` (no Redis call counted it yet: a miss), or how its lookup failed:
 * `not-sent` (never sent: Redis disconnected, or skipped during a backoff) or `uncertain` (it
 * may have counted it, or may still).
 */
export type ClickState = 'counted' | 'fresh' | RedisFailure;

export interface ClickCounterOptions {
  redis: RedisClient;
  /** REDIS_PREFIX: the pending hash and the click tokens are under it (link-host-keys.ts). */
  redisPrefix: string;
  /** CLICK_TOKEN_TTL_SECONDS, in ms: a token's key expires this long after its click. */
  tokenTtlMs: number;
  logger: Logger;
  /** When the request path skips Redis; the same one RedirectService's lookups follow. */
  backoff: RedisBackoff;
  /** At most this many tokens wait in memory for Redis; MAX_UNTOKENED unless a test says. */
  maxUntokened?: number;
  /** At most this many uncertain clicks wait in memory; MAX_UNCERTAIN unless a test says. */
  maxUncertain?: number;
  clock?: () => number;
}

/**
 * The owner of the click policy: `recordClick` tells a click's story; the flusher drives the
 * rest (`takeUnrecorded`, `storeUntokened`, `reconcileUncertain`, `dropUncertain`).
 * Counting is idempotent per click token (COUNT_CLICK_LUA), so a click is counted at most once;
 * what waits in memory is bounded (click-buffers.ts), and every click given up is counted in
 * `clicksDropped` and a `clicks_dropped` warning (drop-ledger.ts), never silently.
 */
export class ClickCounter {
  private readonly unrecorded: UnrecordedClicks;
  private readonly uncertain: UncertainClicks;
  private readonly drops = new DropLedger();
  private readonly clock: () => number;
  /** The pending-clicks hash of each link host shard. */
  private readonly pendingKeys: readonly string[];
  private readonly warn: (message: string, error: unknown) => void;

  constructor(private readonly options: ClickCounterOptions) {
    this.unrecorded = new UnrecordedClicks(options.maxUntokened ?? MAX_UNTOKENED);
    this.uncertain = new UncertainClicks(options.maxUncertain ?? MAX_UNCERTAIN);
    this.clock = options.clock ?? Date.now;
    this.pendingKeys = pendingKeysByShard(options.redisPrefix);
    this.warn = throttled(10_000, (message, error) => {
      options.logger.warn({ err: error }, message);
    });
  }

  /**
   * A click of a person's GET of a link that resolves, counted before the redirect answers
   * (never with a database write):
   * 1. counted by its lookup (a cache hit: the lookup script counted it with its token): done;
   * 2. its lookup failed uncertainly: it may have counted it, so no second call now; it waits to
   *    be reconciled (`reconcileUncertain`), never written to Postgres (that could count twice);
   * 3. Redis certainly not asked (the lookup was not sent, or Redis is in its backoff): counted
   *    in memory, written to Postgres by the flusher, its token handed to Redis later;
   * 4. otherwise (a miss) counted in Redis with its token, one round trip (COUNT_CLICKS); if
   *    that call was not sent, as 3; if it failed uncertainly, Redis is skipped for a moment
   *    and the click goes as 2. A click too late for its token (a clock far off Redis') is
   *    dropped, never counted twice.
   */
  async recordClick(click: Click, state: ClickState): Promise<void> {
    if (state === 'counted') return;
    if (state === 'uncertain') {
      this.addUncertain(click);
      return;
    }
    if (state === 'not-sent' || !this.options.backoff.allows()) {
      this.unrecorded.add(click);
      return;
    }
    try {
      if ((await this.countInRedis([click])) > 0)
        this.drop(1, 'token expired before Redis answered');
    } catch (error) {
      if (redisFailureOf(error) === 'not-sent') {
        this.unrecorded.add(click);
        this.warn('could not count a click in Redis; counting it in memory', error);
      } else {
        this.options.backoff.trip();
        this.addUncertain(click);
        this.warn('a click may or may not have reached Redis; reconciling it later', error);
      }
    }
  }

  /** Clicks dropped since start (`linkservice_clicks_dropped_total`). */
  get clicksDropped(): number {
    return this.drops.total;
  }

  /** Uncertain clicks waiting for Redis (`reconcileUncertain`). */
  get uncertainCount(): number {
    return this.uncertain.count;
  }

  /** Clicks Redis never took, not yet handed to the flusher (`takeUnrecorded`). */
  get unrecordedCount(): number {
    return this.unrecorded.clickCount;
  }

  /** Click tokens of clicks Redis never took, waiting for Redis (`storeUntokened`). */
  get untokenedCount(): number {
    return this.unrecorded.tokenCount;
  }

  /**
   * How long before a click's token would expire its reconciliation is given up (see
   * COUNT_CLICKS): a tenth of the TTL, at most 10 s; generous beside clock differences.
   */
  private get reconcileMarginMs(): number {
    return Math.min(10_000, Math.floor(this.options.tokenTtlMs / 10));
  }

  /** Hands the clicks Redis never took to the flusher (per link id) and starts afresh. */
  takeUnrecorded(): Map<string, number> {
    return this.unrecorded.takeCounts();
  }

  /**
   * Counts uncertain clicks with the idempotent script, in calls of UNCERTAIN_PER_CALL: each is
   * then counted exactly once, whether or not its first call ran. Clicks whose token would
   * expire before Redis could run the call are dropped (`clicksDropped`); those of a call that
   * fails stay for the next pass (a call that fails uncertainly and runs later is harmless: the
   * retry counts nothing more). Resolves with how many are still waiting.
   */
  async reconcileUncertain(now = this.clock()): Promise<number> {
    const late = this.uncertain.dropMadeBy(now - this.options.tokenTtlMs + this.reconcileMarginMs);
    this.drop(late, 'token expired before Redis answered');
    while (this.uncertain.count > 0) {
      const chunk = this.uncertain.next(UNCERTAIN_PER_CALL);
      let tooLate: number;
      try {
        tooLate = await this.countInRedis(chunk);
      } catch {
        break;
      }
      this.uncertain.settled(chunk);
      this.drop(tooLate, 'token expired before Redis answered');
    }
    return this.uncertain.count;
  }

  /**
   * Drops every uncertain click still waiting (a stopping process cannot reconcile them later)
   * and logs every drop not yet in a warning. Resolves with how many were dropped.
   */
  dropUncertain(): number {
    const count = this.uncertain.dropAll();
    this.drop(count, 'shutdown');
    this.logDrops(this.drops.unreported());
    return count;
  }

  /**
   * Logs the `clicks_dropped` total when it grew since the last warning, at most once per
   * DROP_WARNING_INTERVAL_MS. Every drop and every flusher pass calls it, so drops that came
   * inside a window are reported once it ends.
   */
  reportDrops(now = this.clock()): void {
    this.logDrops(this.drops.due(now));
  }

  /**
   * Stores the tokens of clicks Redis never took, with what is left of their time; expired ones
   * are dropped. Those Redis still refuses stay for the next call. Resolves with how many are
   * still waiting.
   */
  async storeUntokened(now = this.clock()): Promise<number> {
    const dropped = this.unrecorded.takeDroppedTokens();
    if (dropped > 0) {
      this.options.logger.warn(
        { tokens: dropped },
        'click tokens dropped: too many waited for Redis',
      );
    }
    const { redis, redisPrefix, tokenTtlMs } = this.options;
    this.unrecorded.expireTokens(now, tokenTtlMs);
    // Not connected: no pipeline is built for it to refuse; the next pass tries again.
    if (redis.status !== 'ready') return this.unrecorded.tokenCount;
    while (this.unrecorded.tokenCount > 0) {
      const chunk = this.unrecorded.nextTokens(TOKENS_PER_PIPELINE);
      // A cluster pipeline must keep to one node: one per shard.
      const groups = callGroups(
        chunk,
        (click) => shardOfTokenHash(click.tokenHash),
        redis.isCluster,
      );
      const stored = (
        await Promise.all(
          groups.map(async (group) => {
            const pipeline = redis.pipeline();
            // Where each click's SET stands in the pipeline, among its visitor's commands.
            const setAt: number[] = [];
            for (const click of group) {
              setAt.push(pipeline.length);
              const value = clickTokenValue({ linkId: click.linkId, clickedAt: click.at });
              // NX: nothing else stores these tokens, but never overwrite what is there (a
              // tombstone).
              const ttlMs = click.at + tokenTtlMs - now;
              pipeline.set(clickTokenKey(redisPrefix, click.tokenHash), value, 'PX', ttlMs, 'NX');
              // Its visitor, which the counting script would have added (a second add is a no-op).
              const visitor = click.analytics?.visitor ?? '';
              if (click.analytics !== null && visitor !== '') {
                const shard = shardOfTokenHash(click.tokenHash);
                const { day } = click.analytics;
                const key = visitorsKeyPrefix(redisPrefix, shard, day) + click.linkId;
                pipeline
                  .pfadd(key, visitor)
                  .pexpireat(key, visitorsExpireAt(day), 'NX')
                  .hset(this.pendingKeys[shard], visitorsField(click.linkId, day), 1);
              }
            }
            const results = await pipeline.exec().catch(() => null);
            return group.filter((_click, index) => results?.[setAt[index]]?.[0] === null);
          }),
        )
      ).flat();
      this.unrecorded.tokensStored(stored);
      if (stored.length < chunk.length) break;
    }
    return this.unrecorded.tokenCount;
  }

  private addUncertain(click: Click): void {
    this.drop(this.uncertain.add(click), 'too many waited');
  }

  /**
   * COUNT_CLICKS for `clicks`, one call per shard on a cluster (a click's pending hash is its
   * token's shard's); resolves with how many were too late, rejects with a RedisCallError (the
   * first call's failure: the clicks of every call are then handled alike, and a second
   * execution of a call that ran counts nothing more).
   */
  private async countInRedis(clicks: readonly Click[]): Promise<number> {
    const { redis, redisPrefix, tokenTtlMs } = this.options;
    const groups = callGroups(
      clicks,
      (click) => shardOfTokenHash(click.tokenHash),
      redis.isCluster,
    );
    const tooLate = await Promise.all(
      groups.map(async (group) => {
        const keys: string[] = [];
        const args: (string | number)[] = [tokenTtlMs, this.reconcileMarginMs];
        for (const click of group) {
          const shard = shardOfTokenHash(click.tokenHash);
          keys.push(this.pendingKeys[shard], clickTokenKey(redisPrefix, click.tokenHash));
          args.push(click.linkId, click.at, ...analyticsArguments(click));
        }
        const replies = await callRedis(redis, () =>
          countClicksScript.run(redis, keys.length, [...keys, ...args]),
        );
        return Array.isArray(replies) ? replies.filter((reply) => reply === -1).length : 0;
      }),
    );
    return tooLate.reduce((sum, count) => sum + count, 0);
  }

  private drop(count: number, reason: DropReason): void {
    this.logDrops(this.drops.drop(count, reason, this.clock()));
  }

  private logDrops(report: DropReport | null): void {
    if (report === null) return;
    this.options.logger.warn(
      report,
      'clicks dropped: uncertain whether Redis counted them, and too late to reconcile',
    );
  }
}

/** A click's analytics arguments of the counting scripts (countClick): dimensions, visitor. */
export function analyticsArguments(click: Pick<Click, 'analytics'>): [string, string] {
  const { analytics } = click;
  return analytics === null ? ['', ''] : [analytics.dimensions, analytics.visitor];
}
