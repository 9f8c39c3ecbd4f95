import type { RedisClient } from '@linkservice/lifecycle';
import { masterNodes } from '@linkservice/lifecycle';
import type { LinkCacheHost, LinkRef } from './link-host-keys';
import {
  aliasOfEntryKey,
  callGroups,
  hostEntryPattern,
  hostGenerationKeys,
  linkCacheKeys,
  shardOfLink,
} from './link-host-keys';
import { aliasOfLegacyEntryKey, legacyLinkCacheKeys } from './link-host-keys.compat';
import type { LinkResolution } from './resolution';
import { decodeResolution, encodeResolution } from './resolution';

export type CacheLookup =
  /** `resolution` null: the alias is known not to exist (negative entry). */
  | { kind: 'hit'; resolution: LinkResolution | null }
  /** Pass `generation` back to `fill` so a fill racing an invalidation is dropped. */
  | { kind: 'miss'; generation: string | null };

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

/**
 * What a fill is checked against: the alias' generation, and the host's behind a `/` once
 * `invalidateHost` has bumped it (`false`: neither exists). `generationOf` in JavaScript is the
 * same rule, for `lookup`.
 */
const GENERATION_OF = `
local function generationOf(aliasGeneration, hostGeneration)
  if hostGeneration then return (aliasGeneration or '') .. '/' .. hostGeneration end
  return aliasGeneration
end`;

function generationOf(aliasGeneration: string | null, hostGeneration: string | null) {
  return hostGeneration === null ? aliasGeneration : `${aliasGeneration ?? ''}/${hostGeneration}`;
}

/**
 * Sets each generation key (KEYS[1..ARGV[2]]) to Redis' time in ms, or one above its value if
 * that is not below (a generation only grows, whatever the clock does), with ARGV[1] ms to live,
 * and deletes the remaining KEYS (entries). A time, not a counter: a miss hands it to the
 * replica read as its fence (`replicaFenceOf`); a fill compares it as a string, as before.
 */
const BUMP_GENERATIONS = `
redis.replicate_commands()
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local count = tonumber(ARGV[2])
for i = 1, count do
  local generation = now
  local previous = tonumber(redis.call('GET', KEYS[i]))
  if previous and previous >= generation then generation = previous + 1 end
  redis.call('SET', KEYS[i], string.format('%d', generation), 'PX', ARGV[1])
end
for i = count + 1, #KEYS do
  redis.call('DEL', KEYS[i])
end
return #KEYS`;

// Sets the entry only when the generation is still what the lookup saw: a writer that committed
// and invalidated in between (the alias, or its whole host) has bumped it, and its change must
// not be overwritten by the older row this filler read.
const FILL_IF_UNCHANGED = `${GENERATION_OF}
if (generationOf(redis.call('GET', KEYS[2]), redis.call('GET', KEYS[3])) or '') == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0`;

/**
 * A lookup inside a script, for a caller that does more in the same round trip (the redirect
 * counts the click of a link that redirects, `REDIRECTING_LINK_ID_LUA`, with the lookups of one
 * event-loop turn in one call). `lookUpEntry(entryKey, generationKey, hostGenerationKey)` returns
 * the entry (false: none) and the generation a fill after a miss needs (`generationOf`), which
 * is only read when there is no entry: with an entry it is 0. Pass both to `lookupOfReply`.
 */
export const LOOKUP_ENTRY_LUA = `${GENERATION_OF}
local function lookUpEntry(entryKey, generationKey, hostGenerationKey)
  local entry = redis.call('GET', entryKey)
  if entry then return entry, 0 end
  return false, generationOf(redis.call('GET', generationKey), redis.call('GET', hostGenerationKey))
end`;

/**
 * The link host's resolution cache in Redis, shared by every redirect replica (its keys:
 * link-host-keys.ts). Writers (gateway PATCH/archive, worker creation) call
 * `invalidate` after they commit; the very next lookup then misses and reads Postgres.
 */
export class LinkCache {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly ttl: LinkCacheTtl = { positiveSeconds: 300, negativeSeconds: 10 },
  ) {}

  /** One round trip: the entry and the generation together. */
  async lookup(ref: LinkRef): Promise<CacheLookup> {
    const keys = linkCacheKeys(this.prefix, ref);
    const [entry, generation, hostGeneration] = await this.redis.mget(
      keys.entry,
      keys.generation,
      keys.hostGeneration,
    );
    return toLookup(entry ?? null, generationOf(generation ?? null, hostGeneration ?? null));
  }

  /**
   * What a `LOOKUP_ENTRY_LUA` reply says for `ref`: `entry` a string or null (the script's
   * false), `generation` its generation reply. An entry this version cannot read (an earlier
   * format, until it expires or is refilled) comes without the generation a fill needs: it then
   * costs a second round trip (`lookup`), and if that fails a miss without a generation (its
   * fill is then dropped if the alias has one), never a rejection: the caller's script may have
   * done its part (counted a click) already.
   */
  lookupOfReply(
    ref: LinkRef,
    entry: unknown,
    generation: unknown,
  ): CacheLookup | Promise<CacheLookup> {
    const found = toLookup(
      typeof entry === 'string' ? entry : null,
      typeof generation === 'string' ? generation : null,
    );
    if (found.kind === 'hit' || generation !== 0) return found;
    return this.lookup(ref).catch((): CacheLookup => ({ kind: 'miss', generation: null }));
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
      3,
      keys.entry,
      keys.generation,
      keys.hostGeneration,
      generation ?? '',
      encodeResolution(resolution),
      ttlMs,
    );
    return stored === 1;
  }

  /**
   * Drops the cached entries (positive or negative) of these aliases and sets their generation,
   * atomically per shard (`callGroups`). Call after the change is committed; it resolves once
   * Redis has applied it, so the caller's response can promise the next redirect sees the
   * change, and a replica that has not applied the change yet is not read for it
   * (`replicaFenceOf`).
   */
  async invalidate(refs: readonly LinkRef[]): Promise<void> {
    const cluster = this.redis.isCluster;
    await Promise.all(
      callGroups(refs, shardOfLink, cluster).map((group) => {
        const generations: string[] = [];
        const entries: string[] = [];
        for (const ref of group) {
          const keys = linkCacheKeys(this.prefix, ref);
          generations.push(keys.generation);
          entries.push(keys.entry);
          if (!cluster) {
            const legacy = legacyLinkCacheKeys(this.prefix, ref);
            generations.push(legacy.generation);
            entries.push(legacy.entry);
          }
        }
        return this.bumpGenerations(generations, entries);
      }),
    );
  }

  /**
   * `invalidate` for every cached alias of one host, for a change that all of the host's
   * resolutions carry (the app's iOS deferred-page setting): SCANs every node for the host's
   * entry keys and invalidates each page as `invalidate` does. Resolves with how many distinct
   * aliases it found and dropped. Call after the change is committed.
   *
   * First it sets the host's generation in every shard: a filler whose lookup missed before, on
   * an alias the SCAN then does not find, read Postgres before the change and its fill is
   * dropped (every fill checks its shard's host generation too). An entry filled before that is
   * found by the SCAN.
   */
  async invalidateHost(host: LinkCacheHost): Promise<number> {
    const cluster = this.redis.isCluster;
    const hostGenerations = hostGenerationKeys(this.prefix, host);
    if (!cluster) {
      const legacy = legacyLinkCacheKeys(this.prefix, { ...host, alias: '' });
      await this.bumpGenerations([...hostGenerations, legacy.hostGeneration], []);
    } else {
      await Promise.all(hostGenerations.map((key) => this.bumpGenerations([key], [])));
    }
    const pattern = hostEntryPattern(this.prefix, host);
    // SCAN may return a key more than once; each alias is invalidated and counted once.
    const seen = new Set<string>();
    for (const node of masterNodes(this.redis)) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', HOST_SCAN_COUNT);
        cursor = next;
        const refs: LinkRef[] = [];
        for (const key of keys) {
          const alias =
            aliasOfEntryKey(this.prefix, host, key) ??
            (cluster ? null : aliasOfLegacyEntryKey(this.prefix, host, key));
          if (alias === null || seen.has(alias)) continue;
          seen.add(alias);
          refs.push({ ...host, alias });
        }
        await this.invalidate(refs);
      } while (cursor !== '0');
    }
    return seen.size;
  }

  /** One BUMP_GENERATIONS call: `generations` and `entries` must be in one slot on a cluster. */
  private async bumpGenerations(generations: string[], entries: string[]): Promise<void> {
    if (generations.length === 0 && entries.length === 0) return;
    await this.redis.eval(
      BUMP_GENERATIONS,
      generations.length + entries.length,
      ...generations,
      ...entries,
      GENERATION_TTL_MS,
      generations.length,
    );
  }
}

/**
 * The replica fence of a miss' generation: the time (ms, Redis' clock) of the last invalidation
 * of the alias or its host, or null when neither has one (none within GENERATION_TTL_MS). A
 * replica may answer the miss only once it has applied what was committed before then. A
 * generation that is not a time (a counter of 0.1, before generations were times) fences at
 * +Infinity: read the primary.
 */
export function replicaFenceOf(generation: string | null): number | null {
  if (generation === null) return null;
  let fence: number | null = null;
  for (const part of generation.split('/')) {
    if (part === '') continue;
    const time = Number(part);
    const at = Number.isSafeInteger(time) && time >= EPOCH_MS_2020 ? time : Infinity;
    fence = fence === null ? at : Math.max(fence, at);
  }
  return fence;
}

/** 2020-01-01 in ms: a generation below it is a 0.1 counter, not a time. */
const EPOCH_MS_2020 = 1_577_836_800_000;

function toLookup(entry: string | null, generation: string | null): CacheLookup {
  if (entry !== null) {
    const resolution = decodeResolution(entry);
    if (resolution !== undefined) return { kind: 'hit', resolution };
  }
  return { kind: 'miss', generation };
}

/** Keys per SCAN call: few round trips over a large keyspace, small replies. */
const HOST_SCAN_COUNT = 1_000;
