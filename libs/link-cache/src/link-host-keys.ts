import calculateSlot from 'cluster-key-slot';
import type { Environment } from '@linkservice/db';

/**
 * Every Redis key of the link host, in one file: its resolution cache (filled by the redirect,
 * invalidated by the gateway, the worker and linkctl) and its clicks (counted and flushed by the
 * redirect; click tokens read by the gateway's app interface). Each name is
 * `<REDIS_PREFIX>:{<shard tag>}:<kind>:…`, where neither a subdomain key, an alias, a token hash
 * nor a batch id contains `:`, so distinct things never share a key.
 *
 * Sharding. Redis Cluster runs a script or a MULTI only on keys of one slot, and the redirect's
 * touch several together: a lookup reads an alias' entry and generations and counts its click
 * (the pending-clicks hash and the click token); a flush pass renames the pending hash into a
 * batch and registers it; an invalidation bumps a generation and drops an entry. So the keys
 * live in LINK_HOST_SHARDS shards, each under one hash tag, and everything one of those calls
 * touches is in one shard:
 * - an alias' entry, generation and host generation: the alias' shard (`shardOfLink`); every
 *   shard holds its own copy of each host's generation, which `invalidateHost` bumps in all;
 * - a click token: the shard its first character names (`shardOfTokenHash`), which the link
 *   host mints as the shard of the alias clicked (ClickTokenMinter), so the lookup that counts
 *   the click touches one shard;
 * - the clicks: one pending hash, batch set and batches per shard.
 * How they spread: an alias' shard is its CRC16 (the slot function) over 16 ranges, so aliases
 * (and so entries, clicks and tokens) are spread evenly over the shards, and the shard tags are
 * chosen so that shard i's slot lies in the i-th sixteenth of the 16384 slots. A cluster made
 * with `redis-cli --cluster create` gives each master one contiguous range of slots, so with M
 * masters each holds about 16/M shards (3 masters: 5, 5 and 6). A single Redis has no slots:
 * the same keys, and the callers then send the calls of every shard together (`callGroups`).
 */
export const LINK_HOST_SHARDS = 16;

const SLOTS = 16_384;
const SLOTS_PER_SHARD = SLOTS / LINK_HOST_SHARDS;

/**
 * Shard i's hash tag: the first `lh<i>.<n>` (n = 0, 1, …) whose slot lies in the i-th
 * sixteenth of the slot range. Fixed by the slot function alone: every process and version
 * computes the same tags (a unit test pins them).
 */
export const LINK_HOST_SHARD_TAGS: readonly string[] = Array.from(
  { length: LINK_HOST_SHARDS },
  (_, shard) => {
    for (let n = 0; ; n += 1) {
      const tag = `lh${shard}.${n}`;
      if (Math.floor(calculateSlot(tag) / SLOTS_PER_SHARD) === shard) return tag;
    }
  },
);

/** The shard of one alias on one host: spread by the slot function over every shard. */
export function shardOfLink(ref: LinkRef): number {
  return Math.floor(
    calculateSlot(`${ref.environment}:${ref.subdomainKey}:${ref.alias}`) / SLOTS_PER_SHARD,
  );
}

/** The characters of a click token (base62), in the order its first one names a shard. */
export const CLICK_TOKEN_ALPHABET =
  '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * The shard a click token's key is in: named by the token's first character, which its stored
 * form (`hashClickToken`) starts with, so the app interface finds the key from the token or its
 * stored form alone. A token the link host did not mint (any base62 text) lands somewhere: it
 * finds nothing there either.
 */
export function shardOfTokenHash(tokenHash: string): number {
  return Math.max(0, CLICK_TOKEN_ALPHABET.indexOf(tokenHash.charAt(0))) % LINK_HOST_SHARDS;
}

/** The first character of a token minted for `shard` (`ClickTokenMinter`). */
export function clickTokenShardCharacter(shard: number): string {
  return CLICK_TOKEN_ALPHABET.charAt(shard);
}

/** `<prefix>:{<shard tag>}`: what every key of one shard starts with. */
function shardSpace(prefix: string, shard: number): string {
  if (!Number.isInteger(shard) || shard < 0 || shard >= LINK_HOST_SHARDS) {
    throw new RangeError(`no link host shard ${shard}`);
  }
  return `${prefix}:{${LINK_HOST_SHARD_TAGS[shard]}}`;
}

/**
 * How calls that touch several shards are grouped: on Redis Cluster one call per shard (a
 * script or MULTI must stay in one slot), on a single Redis one call for all of them (nothing
 * to keep apart, and per call is where Redis and ioredis spend their time).
 */
export function callGroups<T>(
  items: readonly T[],
  shardOf: (item: T) => number,
  cluster: boolean,
): T[][] {
  if (!cluster) return items.length === 0 ? [] : [[...items]];
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const shard = shardOf(item);
    const group = groups.get(shard);
    if (group) group.push(item);
    else groups.set(shard, [item]);
  }
  return [...groups.values()];
}

/** One alias on one link host: what the redirect service resolves and what writers invalidate. */
export interface LinkRef {
  subdomainKey: string;
  environment: Environment;
  alias: string;
}

/** One link host: an app's live host or its `-test` host. */
export type LinkCacheHost = Pick<LinkRef, 'subdomainKey' | 'environment'>;

export interface LinkCacheKeys {
  /** The cached resolution (or the negative marker). */
  entry: string;
  /**
   * Set by every invalidation to Redis' time in ms (above its previous value): a fill only
   * lands if it is unchanged since the lookup, and a miss reads a replica only if the replica
   * has applied what was committed before it.
   */
  generation: string;
  /**
   * The host's generation in this alias' shard, set by `invalidateHost` (a change every alias
   * of the host carries) in every shard alike: a fill also only lands if it is unchanged since
   * the lookup.
   */
  hostGeneration: string;
}

/**
 * `<prefix>:{<tag>}:link-cache:<env>:<subdomainKey>:<alias>`, `…:link-cache-gen:…` and
 * `…:link-cache-host-gen:<env>:<subdomainKey>`, all in the alias' shard.
 */
export function linkCacheKeys(prefix: string, ref: LinkRef): LinkCacheKeys {
  return linkCacheKeysIn(shardSpace(prefix, shardOfLink(ref)), ref);
}

/** `linkCacheKeys` for a caller that has computed `shardOfLink(ref)` already. */
export function linkCacheKeysOfShard(prefix: string, shard: number, ref: LinkRef): LinkCacheKeys {
  return linkCacheKeysIn(shardSpace(prefix, shard), ref);
}

/** The keys of `ref` under `space` (a shard's, or the layout before shards: compat). */
export function linkCacheKeysIn(space: string, ref: LinkRef): LinkCacheKeys {
  const host = `${ref.environment}:${ref.subdomainKey}`;
  const id = `${host}:${ref.alias}`;
  return {
    entry: `${space}:link-cache:${id}`,
    generation: `${space}:link-cache-gen:${id}`,
    hostGeneration: `${space}:link-cache-host-gen:${host}`,
  };
}

/** The host's generation key in each shard, in shard order (`invalidateHost` sets them all). */
export function hostGenerationKeys(prefix: string, host: LinkCacheHost): string[] {
  return LINK_HOST_SHARD_TAGS.map(
    (_, shard) => linkCacheKeysIn(shardSpace(prefix, shard), { ...host, alias: '' }).hostGeneration,
  );
}

/**
 * A SCAN pattern that matches every entry key of one host, in every shard (and in the layout
 * before shards): `<prefix>:*link-cache:<env>:<subdomainKey>:*`. It can match other keys too
 * (another REDIS_PREFIX that starts with this one): `aliasOfEntryKey` tells.
 */
export function hostEntryPattern(prefix: string, host: LinkCacheHost): string {
  return `${escapeGlob(prefix)}:*link-cache:${escapeGlob(host.environment)}:${escapeGlob(host.subdomainKey)}:*`;
}

/** The alias whose entry key (in its own shard) `key` is, or null. */
export function aliasOfEntryKey(prefix: string, host: LinkCacheHost, key: string): string | null {
  const marker = `:link-cache:${host.environment}:${host.subdomainKey}:`;
  const at = key.indexOf(marker);
  if (at === -1) return null;
  const alias = key.slice(at + marker.length);
  return linkCacheKeys(prefix, { ...host, alias }).entry === key ? alias : null;
}

/** Redis glob metacharacters; REDIS_PREFIX and subdomain keys have none, but never match by accident. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * `<prefix>:{<tag>}:click-token:<SHA-256 of the token, base64url>`, in the shard of the hash:
 * a click token's record (see click-token-store.ts), set with the click it was minted for.
 */
export function clickTokenKey(prefix: string, tokenHash: string): string {
  return `${shardSpace(prefix, shardOfTokenHash(tokenHash))}:click-token:${tokenHash}`;
}

/** A SCAN pattern that matches every click token key under `prefix` (tests, tooling). */
export function clickTokenPattern(prefix: string): string {
  return `${escapeGlob(prefix)}:{*}:click-token:*`;
}

/**
 * The redirect's click counting, in each shard:
 * - `pending`: hash link id -> clicks not yet handed to a flusher (HINCRBY per redirect);
 * - `batch:<createdAtMs>:<uuid>`: a hash some flusher took over by renaming `pending`;
 * - `batches`: the set of batch keys not yet applied, so leftovers can be found without SCAN.
 */
export interface ClickKeys {
  pending: string;
  batches: string;
  batchPrefix: string;
}

export function clickKeys(prefix: string, shard: number): ClickKeys {
  return clickKeysIn(shardSpace(prefix, shard));
}

/** Each shard's pending-clicks hash, by shard: built once by the redirect's hot-path callers. */
export function pendingKeysByShard(prefix: string): readonly string[] {
  return LINK_HOST_SHARD_TAGS.map((_, shard) => clickKeys(prefix, shard).pending);
}

/**
 * `<prefix>:{<tag>}:visitors:<UTC day>:` + link id: the HyperLogLog of a link's unique visitors
 * that day (HMACs under the day's salt, never an address), in the shard of the link's alias, so
 * the lookup that counts a click adds its visitor in the same call. The counting script makes
 * the key from the shard's pending key (its shard space: the pending key without
 * PENDING_SUFFIX) and the click's day and link id (only it knows which link an alias resolves
 * to); the key stays in that slot. Each expires at the end of the next day, with the salt.
 */
export function visitorsKeyPrefix(prefix: string, shard: number, day: number): string {
  return `${shardSpace(prefix, shard)}:visitors:${day}:`;
}

/** The click keys under `space` (a shard's, or the layout before shards: compat). */
/** What a shard's pending-clicks key adds to its shard space (`<prefix>:{<tag>}:`). */
export const PENDING_SUFFIX = 'clicks:pending';

export function clickKeysIn(space: string): ClickKeys {
  return {
    pending: `${space}:${PENDING_SUFFIX}`,
    batches: `${space}:clicks:batches`,
    batchPrefix: `${space}:clicks:batch:`,
  };
}

export interface BatchName {
  key: string;
  /** `<createdAtMs>:<uuid>`: unique, and the id recorded in link_click_batches. */
  id: string;
  createdAt: number;
}

export function batchName(keys: ClickKeys, createdAt: number, uuid: string): BatchName {
  const id = `${createdAt}:${uuid}`;
  return { key: `${keys.batchPrefix}${id}`, id, createdAt };
}

export function parseBatchKey(keys: ClickKeys, key: string): BatchName | null {
  if (!key.startsWith(keys.batchPrefix)) return null;
  const id = key.slice(keys.batchPrefix.length);
  const createdAt = Number(id.slice(0, id.indexOf(':')));
  return Number.isSafeInteger(createdAt) ? { key, id, createdAt } : null;
}
