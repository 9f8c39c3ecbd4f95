import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { LinkRef } from './keys';
import { linkCacheKeys } from './keys';
import type { LinkResolution } from './resolution';
import { decodeResolution, encodeResolution } from './resolution';

export type CacheLookup =
  /** `resolution` null: the alias is known not to exist (negative entry). */
  | { kind: 'hit'; resolution: LinkResolution | null }
  /** Pass `generation` back to `fill` so a fill racing an invalidation is dropped. */
  | { kind: 'miss'; generation: string | null };

/** The outcome of `lookupCountingClick`. */
export interface CountingLookup {
  lookup: CacheLookup;
  /** The script counted a click: the entry was a link that redirects at `click.at`. */
  counted: boolean;
}

/** Where and when to count a click on a hit (a redirect service's pending-clicks hash). */
export interface ClickTarget {
  /** Hash of link id -> clicks; HINCRBY <hash> <linkId> 1. */
  hash: string;
  /** The request's clock, epoch ms: the same value the caller decides the outcome with. */
  at: number;
}

export interface LinkCacheTtl {
  /** How long a resolution may be served from the cache; invalidation ends it sooner. */
  positiveSeconds: number;
  /** How long "no such alias" is remembered; creation invalidates it at once. */
  negativeSeconds: number;
}

/**
 * How long a generation counter outlives its last bump. A fill compares against it, so it must
 * outlast any lookup-to-fill window (one Postgres query); an hour is far beyond that.
 */
const GENERATION_TTL_MS = 60 * 60 * 1000;

// Sets the entry only when the generation is still what the lookup saw: a writer that committed
// and invalidated in between has bumped it, and its change must not be overwritten by the older
// row this filler read.
const FILL_IF_UNCHANGED = `
if (redis.call('GET', KEYS[2]) or '') == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`;

// One round trip for a redirect: the entry, the generation (for a fill after a miss) and, when
// ARGV[1] carries the request's clock, the click of a link that redirects at that time. Mirrors
// `redirectsAt`: the entry starts with `redirectsUntil` (empty: for ever) and the link id, and a
// link redirects while now < until. A negative or unreadable entry counts nothing.
const LOOKUP_COUNTING_CLICK = `
local entry = redis.call('GET', KEYS[1])
local generation = redis.call('GET', KEYS[2])
local counted = 0
if entry then
  local untilMs, linkId = string.match(entry, '^(%d*) (%S+) ')
  if linkId and ARGV[1] ~= '' and (untilMs == '' or tonumber(ARGV[1]) < tonumber(untilMs)) then
    redis.call('HINCRBY', KEYS[3], linkId, 1)
    counted = 1
  end
end
return {entry, generation, counted}`;
const LOOKUP_COUNTING_CLICK_SHA = createHash('sha1').update(LOOKUP_COUNTING_CLICK).digest('hex');

/**
 * The link host's resolution cache in Redis, shared by every redirect replica, and the one
 * place that knows its key scheme. Writers (gateway PATCH/archive, worker creation) call
 * `invalidate` after they commit; the very next lookup then misses and reads Postgres.
 */
export class LinkCache {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly ttl: LinkCacheTtl = { positiveSeconds: 300, negativeSeconds: 10 },
  ) {}

  /** One round trip: the entry and the generation together. */
  async lookup(ref: LinkRef): Promise<CacheLookup> {
    const keys = linkCacheKeys(this.prefix, ref);
    const [entry, generation] = await this.redis.mget(keys.entry, keys.generation);
    return toLookup(entry ?? null, generation ?? null);
  }

  /**
   * `lookup`, and in the same round trip, when `click` is given and the entry is a link that
   * redirects at `click.at`, one click counted in `click.hash` (HINCRBY by link id). The caller
   * decides its outcome with the same `click.at`, so it counts a click itself only when the
   * lookup did not (a miss, or Redis unavailable).
   */
  async lookupCountingClick(ref: LinkRef, click: ClickTarget | null): Promise<CountingLookup> {
    const keys = linkCacheKeys(this.prefix, ref);
    // Without a click there is no third key, and ARGV[1] is empty.
    const [numKeys, ...keysAndArgs] = click
      ? ([3, keys.entry, keys.generation, click.hash, String(click.at)] as const)
      : ([2, keys.entry, keys.generation, ''] as const);
    let reply: unknown;
    try {
      reply = await this.redis.evalsha(LOOKUP_COUNTING_CLICK_SHA, numKeys, ...keysAndArgs);
    } catch (error) {
      // A Redis that restarted or flushed its script cache: send the script itself, once.
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      reply = await this.redis.eval(LOOKUP_COUNTING_CLICK, numKeys, ...keysAndArgs);
    }
    const [entry, generation, counted] = reply as [string | null, string | null, number];
    return { lookup: toLookup(entry, generation), counted: counted === 1 };
  }

  /** Stores what Postgres said, unless an invalidation happened since `lookup`. */
  async fill(
    ref: LinkRef,
    generation: string | null,
    resolution: LinkResolution | null,
  ): Promise<boolean> {
    const keys = linkCacheKeys(this.prefix, ref);
    const ttlMs = 1000 * (resolution ? this.ttl.positiveSeconds : this.ttl.negativeSeconds);
    const stored = await this.redis.eval(
      FILL_IF_UNCHANGED,
      2,
      keys.entry,
      keys.generation,
      generation ?? '',
      encodeResolution(resolution),
      ttlMs,
    );
    return stored === 1;
  }

  /**
   * Drops the cached entries (positive or negative) of these aliases and bumps their generation,
   * atomically. Call after the change is committed; it resolves once Redis has applied it, so
   * the caller's response can promise the next redirect sees the change.
   */
  async invalidate(refs: readonly LinkRef[]): Promise<void> {
    if (refs.length === 0) return;
    const tx = this.redis.multi();
    for (const ref of refs) {
      const keys = linkCacheKeys(this.prefix, ref);
      tx.incr(keys.generation).pexpire(keys.generation, GENERATION_TTL_MS).del(keys.entry);
    }
    const results = await tx.exec();
    // exec() resolves null when the transaction was aborted, and per-command errors in place.
    if (results === null) throw new Error('link cache invalidation was aborted');
    const failed = results.find(([error]) => error !== null);
    if (failed?.[0]) throw failed[0];
  }
}

function toLookup(entry: string | null, generation: string | null): CacheLookup {
  if (entry !== null) {
    const resolution = decodeResolution(entry);
    if (resolution !== undefined) return { kind: 'hit', resolution };
  }
  return { kind: 'miss', generation };
}
