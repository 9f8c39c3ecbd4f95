import type { Redis } from 'ioredis';
import type { LinkCacheHost, LinkRef } from './link-host-keys';
import { linkCacheHostEntryPrefix, linkCacheKeys } from './link-host-keys';
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
    private readonly redis: Redis,
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

  /**
   * `invalidate` for every cached alias of one host, for a change that all of the host's
   * resolutions carry (the app's iOS deferred-page setting): SCANs the host's entry keys and
   * invalidates each batch as `invalidate` does. Resolves with how many distinct entries it
   * found and dropped. Call after the change is committed.
   *
   * First it bumps the host's generation: a filler whose lookup missed before, on an alias the
   * SCAN then does not find, read Postgres before the change and its fill is dropped (every fill
   * checks the host's generation too). An entry filled before the bump is found by the SCAN.
   */
  async invalidateHost(host: LinkCacheHost): Promise<number> {
    // The empty alias' keys are the host's: its generation, and its entry keys' prefix.
    const hostKeys = linkCacheKeys(this.prefix, { ...host, alias: '' });
    const hostEntryPrefix = linkCacheHostEntryPrefix(this.prefix, host);
    const bumped = await this.redis
      .multi()
      .incr(hostKeys.hostGeneration)
      .pexpire(hostKeys.hostGeneration, GENERATION_TTL_MS)
      .exec();
    const failed = bumped === null ? [new Error('aborted')] : bumped.find(([error]) => error);
    if (failed?.[0]) throw failed[0];
    const pattern = `${escapeGlob(hostEntryPrefix)}*`;
    // SCAN may return a key more than once; each alias is invalidated and counted once.
    const seen = new Set<string>();
    let cursor = '0';
    do {
      const [next, entryKeys] = await this.redis.scan(
        cursor,
        'MATCH',
        pattern,
        'COUNT',
        HOST_SCAN_COUNT,
      );
      cursor = next;
      const refs: LinkRef[] = [];
      for (const entryKey of entryKeys) {
        const alias = entryKey.slice(hostEntryPrefix.length);
        if (seen.has(alias)) continue;
        seen.add(alias);
        refs.push({ ...host, alias });
      }
      await this.invalidate(refs);
    } while (cursor !== '0');
    return seen.size;
  }
}

function toLookup(entry: string | null, generation: string | null): CacheLookup {
  if (entry !== null) {
    const resolution = decodeResolution(entry);
    if (resolution !== undefined) return { kind: 'hit', resolution };
  }
  return { kind: 'miss', generation };
}

/** Keys per SCAN call: few round trips over a large keyspace, small replies. */
const HOST_SCAN_COUNT = 1_000;

/** Redis glob metacharacters; REDIS_PREFIX and subdomain keys have none, but never match by accident. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
