import type { Redis } from 'ioredis';
import type { LinkRef } from './keys';
import { linkCacheKeys } from './keys';
import type { LinkResolution } from './resolution';
import { decodeResolution, encodeResolution } from './resolution';
import { clickTokenKey } from './click-tokens';
import { RedisCallError, RedisScript, callRedis } from './redis-calls';

export type CacheLookup =
  /** `resolution` null: the alias is known not to exist (negative entry). */
  | { kind: 'hit'; resolution: LinkResolution | null }
  /** Pass `generation` back to `fill` so a fill racing an invalidation is dropped. */
  | { kind: 'miss'; generation: string | null };

/** The outcome of `lookupCountingClick`. */
export interface CountingLookup {
  lookup: CacheLookup;
  /**
   * The click is counted (its token stored with it): the entry was a link that redirects at
   * `click.at`, and this call counted it, or an earlier execution of the same click did (its
   * token's key was there already: counting is idempotent per token). Also possible with a
   * miss: an entry of an earlier format leads with the same two fields, so the script counts it
   * though it reads as unreadable here; the caller must then not count again.
   */
  counted: boolean;
}

/** Where and when to count a click on a hit (a redirect service's pending-clicks hash). */
export interface ClickTarget {
  /** Hash of link id -> clicks; HINCRBY <hash> <linkId> 1. */
  hash: string;
  /** The request's clock, epoch ms: the same value the caller decides the outcome with. */
  at: number;
  /** SHA-256 of the click token minted for this click (`hashClickToken`). */
  tokenHash: string;
  /**
   * The token's lifetime (CLICK_TOKEN_TTL_SECONDS, in ms): its key (`clickTokenKey` under this
   * cache's prefix) is set to the click's record (`<linkId> <at>`, see `clickTokenValue`) with
   * this expiry, in the same script call that counts the click: no round trip of its own. The
   * token is the click's idempotency key: the key is set only if it does not exist (NX), and
   * the click is counted only when it was set, so a call that runs twice (resent, or run late
   * after a timeout while the caller counted the click another way) counts it once.
   */
  tokenTtlMs: number;
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
 * One round trip for any number of redirects: per lookup the entry, the generation (for a fill
 * after a miss) and, when its clock is given, the click of a link that redirects at that time,
 * with its click token. KEYS: the click hash, then (entry, generation, host generation) per
 * lookup. ARGV: the token key prefix and the tokens' TTL (ms), then (clock, token hash) per
 * lookup (an empty clock counts nothing). Everything a call shares is sent once. The token keys
 * are built here from prefix and hash rather than passed as
 * KEYS, like the entries of many aliases in one call: the script runs on one Redis, not across
 * a cluster's slots.
 *
 * Mirrors `redirectsAt`: the entry starts with `redirectsUntil` (empty: for ever) and the link
 * id, and a link redirects while now < until; a negative or unreadable entry counts nothing. A
 * click of a redirecting link sets its token's key to `<linkId> <clock>` (`clickTokenValue`)
 * with the token's expiry, only if the key does not exist (SET NX), and is counted only then:
 * a key already there means this click was counted before (a resent or late call, or the
 * redirect service's own reconciliation) or its token was used up since (a tombstone,
 * `ClickTokenStore.forget`). Either way the reply says counted: the caller must not count it
 * again. Replies (entry, generation, counted) per lookup; `false` becomes a nil reply (a nil in
 * a Lua table would end the list). The generation is only read when there is no entry (it only
 * serves a fill after a miss): with an entry its reply is 0, and an entry the caller cannot read
 * (an earlier format) costs it a second round trip for the generation (`lookup`).
 */
const LOOKUP_COUNTING_CLICK = `${GENERATION_OF}
local replies = {}
local tokenPrefix, tokenTtl = ARGV[1], ARGV[2]
for i = 1, (#ARGV - 2) / 2 do
  local at, tokenHash = ARGV[i * 2 + 1], ARGV[i * 2 + 2]
  local entry = redis.call('GET', KEYS[i * 3 - 1])
  local counted = 0
  if entry and at ~= '' then
    local untilMs, linkId = string.match(entry, '^(%d*) (%S+) ')
    if linkId and (untilMs == '' or tonumber(at) < tonumber(untilMs)) then
      if redis.call('SET', tokenPrefix .. tokenHash, linkId .. ' ' .. at, 'PX', tokenTtl, 'NX') then
        redis.call('HINCRBY', KEYS[1], linkId, 1)
      end
      counted = 1
    end
  end
  replies[i * 3 - 2] = entry
  if entry then
    replies[i * 3 - 1] = 0
  else
    replies[i * 3 - 1] =
      generationOf(redis.call('GET', KEYS[i * 3]), redis.call('GET', KEYS[i * 3 + 1]))
  end
  replies[i * 3] = counted
end
return replies`;
/** Keeps one call's reply (and Redis' time inside one script) small under a burst. */
const MAX_LOOKUPS_PER_CALL = 64;
const lookupCountingClickScript = new RedisScript(LOOKUP_COUNTING_CLICK);

/**
 * The link host's resolution cache in Redis, shared by every redirect replica, and the one
 * place that knows its key scheme. Writers (gateway PATCH/archive, worker creation) call
 * `invalidate` after they commit; the very next lookup then misses and reads Postgres.
 */
export class LinkCache {
  /** Lookups asked for in this event-loop turn, sent together once it ends. */
  private queued: QueuedLookup[] = [];

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
   * `lookup`, and in the same round trip, when `click` is given and the entry is a link that
   * redirects at `click.at`, one click counted in `click.hash` (HINCRBY by link id) and its
   * click token stored (`click.token`). The caller
   * decides its outcome with the same `click.at`, so it counts a click itself only when the
   * lookup did not (a miss, or Redis unavailable).
   *
   * A failure rejects with a `RedisCallError` that says whether the call was `not-sent` (the
   * client was not ready, or refused to write it: nothing was counted) or `uncertain` (a
   * timeout or a lost connection: the script may have run, or may still run later).
   */
  lookupCountingClick(ref: LinkRef, click: ClickTarget | null): Promise<CountingLookup> {
    return new Promise((resolve, reject) => {
      // setImmediate runs once this turn's I/O callbacks are done: every request read in the
      // turn has queued its lookup by then, and they all leave as one script call. Per call,
      // not per lookup, is where Redis and ioredis spend most of their time (measured: about
      // 8 + 15 us of CPU for a call with one lookup, 4 + 4 us per lookup in calls of three).
      if (this.queued.length === 0) {
        setImmediate(() => {
          this.sendQueued();
        });
      }
      this.queued.push({ ref, click, resolve, reject });
    });
  }

  private sendQueued(): void {
    const queued = this.queued;
    this.queued = [];
    // One call counts into one click hash with one token TTL (in practice every lookup of a
    // service shares them); lookups without a click go with any.
    const groups = new Map<string, QueuedLookup[]>();
    for (const lookup of queued) {
      const group = lookup.click ? `${lookup.click.hash} ${lookup.click.tokenTtlMs}` : '';
      const members = groups.get(group);
      if (members) members.push(lookup);
      else groups.set(group, [lookup]);
    }
    const uncounted = groups.get('') ?? [];
    groups.delete('');
    const calls = groups.size > 0 ? [...groups.values()] : [[]];
    calls[0].push(...uncounted);
    for (const lookups of calls) {
      for (let start = 0; start < lookups.length; start += MAX_LOOKUPS_PER_CALL) {
        void this.lookUpAll(lookups.slice(start, start + MAX_LOOKUPS_PER_CALL));
      }
    }
  }

  /**
   * One script call for `lookups` (one click hash and token TTL); its failure is each lookup's,
   * as a RedisCallError (`callRedis`). A reply that cannot be read is an uncertain failure too.
   */
  private async lookUpAll(lookups: QueuedLookup[]): Promise<void> {
    const click = lookups.find((lookup) => lookup.click)?.click;
    const keys: string[] = [];
    const args: string[] = [clickTokenKey(this.prefix, ''), String(click?.tokenTtlMs ?? 0)];
    for (const { ref, click: counting } of lookups) {
      const { entry, generation, hostGeneration } = linkCacheKeys(this.prefix, ref);
      keys.push(entry, generation, hostGeneration);
      args.push(counting ? String(counting.at) : '', counting?.tokenHash ?? '');
    }
    // Without a click the click hash is never written; the first entry's key stands in.
    keys.unshift(click?.hash ?? keys[0]);
    try {
      const replies = (await callRedis(this.redis, () =>
        lookupCountingClickScript.run(this.redis, keys.length, [...keys, ...args]),
      )) as unknown[];
      lookups.forEach((lookup, index) => {
        const [entry, generation, counted] = replies.slice(index * 3, index * 3 + 3);
        const found = toLookup(
          typeof entry === 'string' ? entry : null,
          typeof generation === 'string' ? generation : null,
        );
        if (found.kind === 'miss' && generation === 0) {
          // An entry this version cannot read; the script skipped its generation, which a fill
          // needs (rare: entries of an earlier format, until they expire or are refilled).
          // If that fails, a miss without a generation (its fill is then dropped if the alias
          // has one), never a rejection: the script may have counted the click, and a rejected
          // lookup's caller counts it again on its fallback.
          this.lookup(lookup.ref).then(
            (again) => {
              lookup.resolve({ lookup: again, counted: counted === 1 });
            },
            () => {
              lookup.resolve({
                lookup: { kind: 'miss', generation: null },
                counted: counted === 1,
              });
            },
          );
          return;
        }
        lookup.resolve({ lookup: found, counted: counted === 1 });
      });
    } catch (error) {
      // Nobody awaits this call: every lookup must settle, also when reading the reply throws
      // (a lookup already resolved ignores the rejection); the script has run then.
      const failure =
        error instanceof RedisCallError ? error : new RedisCallError('uncertain', error);
      for (const lookup of lookups) lookup.reject(failure);
    }
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
    const bumped = await this.redis
      .multi()
      .incr(hostKeys.hostGeneration)
      .pexpire(hostKeys.hostGeneration, GENERATION_TTL_MS)
      .exec();
    const failed = bumped === null ? [new Error('aborted')] : bumped.find(([error]) => error);
    if (failed?.[0]) throw failed[0];
    const hostEntryPrefix = hostKeys.entry;
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

interface QueuedLookup {
  ref: LinkRef;
  click: ClickTarget | null;
  resolve: (found: CountingLookup) => void;
  reject: (error: unknown) => void;
}

function toLookup(entry: string | null, generation: string | null): CacheLookup {
  if (entry !== null) {
    const resolution = decodeResolution(entry);
    if (resolution !== undefined) return { kind: 'hit', resolution };
  }
  return { kind: 'miss', generation };
}

/** One link host: an app's live host or its `-test` host. */
export type LinkCacheHost = Pick<LinkRef, 'subdomainKey' | 'environment'>;

/** Keys per SCAN call: few round trips over a large keyspace, small replies. */
const HOST_SCAN_COUNT = 1_000;

/** Redis glob metacharacters; REDIS_PREFIX and subdomain keys have none, but never match by accident. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
