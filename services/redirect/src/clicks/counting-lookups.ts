import type { RedisClient } from '@linkservice/lifecycle';
import type { CacheLookup, LinkCache, LinkRef } from '@linkservice/link-cache';
import {
  callGroups,
  clickTokenKey,
  linkCacheKeysOfShard,
  pendingKeysByShard,
  shardOfLink,
} from '@linkservice/link-cache';
import { RedisCallError, RedisScript, callRedis } from '../redis-calls';
import { LOOKUP_COUNTING_CLICK } from './click-scripts';
import { analyticsArguments } from './click-counter';
import type { ClickDescription } from '../analytics/click-analytics';

/** The click a lookup counts when its link redirects at `at`. */
export interface LookupClick {
  /** SHA-256 of the click token minted for this click (`hashClickToken`). */
  tokenHash: string;
  /** The request's clock, epoch ms: the same value the caller decides the outcome with. */
  at: number;
  /** Its analytics, counted with it; null when analytics are off. */
  analytics: ClickDescription | null;
}

/** What `lookUp` found, and whether the click it was given is counted. */
export interface CountingLookup {
  lookup: CacheLookup;
  /**
   * The click is counted (its token stored with it): the entry was a link that redirects at
   * `click.at`, and this call counted it, or an earlier execution of the same click did (its
   * token's key was there already). Also possible with a miss: an entry of an earlier format
   * leads with the same two fields, so the script counts it though it reads as unreadable here;
   * the caller must then not count again.
   */
  counted: boolean;
}

export interface CountingLookupsOptions {
  redis: RedisClient;
  /** Resolution entries are read as this cache writes them. */
  cache: LinkCache;
  /** REDIS_PREFIX: the cache's entries, the pending hash and the click tokens are under it. */
  redisPrefix: string;
  /** CLICK_TOKEN_TTL_SECONDS, in ms: a counted click's token expires this long after it. */
  tokenTtlMs: number;
}

/** Keeps one call's reply (and Redis' time inside one script) small under a burst. */
const MAX_LOOKUPS_PER_CALL = 64;
const lookupCountingClickScript = new RedisScript(LOOKUP_COUNTING_CLICK);

interface QueuedLookup {
  ref: LinkRef;
  /** `shardOfLink(ref)`, computed once per redirect. */
  shard: number;
  click: LookupClick | null;
  resolve: (found: CountingLookup) => void;
  reject: (error: unknown) => void;
}

/**
 * The redirect's one Redis round trip per cached redirect: the cache lookup and, for a person's
 * GET, the click counted with its token (LOOKUP_COUNTING_CLICK), for every redirect of the same
 * event-loop turn in one script call (on a cluster, one per link host shard among them: a
 * click's token is minted in its alias' shard, so each lookup stays in one).
 */
export class CountingLookups {
  /** Lookups asked for in this event-loop turn, sent together once it ends. */
  private queued: QueuedLookup[] = [];
  /** The pending-clicks hash of each link host shard. */
  private readonly pendingKeys: readonly string[];

  constructor(private readonly options: CountingLookupsOptions) {
    this.pendingKeys = pendingKeysByShard(options.redisPrefix);
  }

  /**
   * The cache lookup of `ref` and, when `click` is given and the entry is a link that redirects
   * at `click.at`, that click counted. The caller decides its outcome with the same `click.at`,
   * so it counts a click itself only when the lookup did not (a miss, or Redis unavailable).
   * `shard` is `shardOfLink(ref)` when the caller has it already.
   *
   * A failure rejects with a `RedisCallError` that says whether the call was `not-sent` (the
   * client was not ready, or refused to write it: nothing was counted) or `uncertain` (a timeout or a lost connection: the script may
   * have run, or may still run later).
   */
  lookUp(
    ref: LinkRef,
    click: LookupClick | null,
    shard: number = shardOfLink(ref),
  ): Promise<CountingLookup> {
    return new Promise((resolve, reject) => {
      // setImmediate runs once this turn's I/O callbacks are done: every request read in the
      // turn has queued its lookup by then, and they all leave as one script call. Per call,
      // not per lookup, is where Redis and ioredis spend most of their time (services/redirect
      // README, "Clicks").
      if (this.queued.length === 0) {
        setImmediate(() => {
          this.sendQueued();
        });
      }
      this.queued.push({ ref, shard, click, resolve, reject });
    });
  }

  private sendQueued(): void {
    const queued = this.queued;
    this.queued = [];
    const { redis } = this.options;
    for (const group of callGroups(queued, ({ shard }) => shard, redis.isCluster)) {
      for (let start = 0; start < group.length; start += MAX_LOOKUPS_PER_CALL) {
        void this.lookUpAll(group.slice(start, start + MAX_LOOKUPS_PER_CALL));
      }
    }
  }

  /**
   * One script call for `lookups`; its failure is each lookup's, as a RedisCallError
   * (`callRedis`). A reply that cannot be read is an uncertain failure too.
   */
  private async lookUpAll(lookups: QueuedLookup[]): Promise<void> {
    const { redis, cache, redisPrefix, tokenTtlMs } = this.options;
    const keys: string[] = [];
    const args: string[] = [String(tokenTtlMs)];
    for (const { ref, shard, click } of lookups) {
      const { entry, generation, hostGeneration } = linkCacheKeysOfShard(redisPrefix, shard, ref);
      keys.push(
        entry,
        generation,
        hostGeneration,
        click ? clickTokenKey(redisPrefix, click.tokenHash) : entry,
        this.pendingKeys[shard],
      );
      if (click) args.push(String(click.at), ...analyticsArguments(click));
      else args.push('', '', '');
    }
    try {
      const replies = (await callRedis(redis, () =>
        lookupCountingClickScript.run(redis, keys.length, [...keys, ...args]),
      )) as unknown[];
      lookups.forEach((queued, index) => {
        const entry = replies[index * 3];
        const generation = replies[index * 3 + 1];
        const counted = replies[index * 3 + 2] === 1;
        const lookup = cache.lookupOfReply(queued.ref, entry, generation);
        if (lookup instanceof Promise) {
          void lookup.then((read) => {
            queued.resolve({ lookup: read, counted });
          });
        } else {
          queued.resolve({ lookup, counted });
        }
      });
    } catch (error) {
      // Nobody awaits this call: every lookup must settle, also when reading the reply throws
      // (a lookup already resolved ignores the rejection); the script has run then.
      const failure =
        error instanceof RedisCallError ? error : new RedisCallError('uncertain', error);
      for (const queued of lookups) queued.reject(failure);
    }
  }
}
