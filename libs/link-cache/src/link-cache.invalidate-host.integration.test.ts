import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { testEnvironment } from '@linkservice/testing';
import type { CacheLookup } from './link-cache';
import { LOOKUP_ENTRY_LUA, LinkCache } from './link-cache';
import type { LinkCacheHost, LinkRef } from './link-host-keys';
import { linkCacheKeys } from './link-host-keys';

// LinkCache.invalidateHost against the run's Redis: what linkctl calls after an app's iOS
// deferred-page setting changes, for every cached alias of the app's host at once. It acts on
// keys whatever an entry holds, so these tests cache "no such alias" (a negative entry) or write
// entries directly, and leave the resolution format to link-cache.integration.test.ts.

const env = testEnvironment();
const redis = new Redis(env.redisUrl);
afterAll(() => redis.quit());

/** Every test gets its own subdomain key, so nothing is shared between tests. */
function freshHost(): LinkCacheHost {
  return { subdomainKey: `h${randomUUID().slice(0, 8)}`, environment: 'live' };
}

const at = (host: LinkCacheHost, alias: string): LinkRef => ({ ...host, alias });

/** Negative entries that outlive any test. */
const newCache = (prefix = env.redisPrefix) =>
  new LinkCache(redis, prefix, { positiveSeconds: 300, negativeSeconds: 300 });
const NEGATIVE_HIT = { kind: 'hit', resolution: null };
/** A generation: Redis' time in ms when it was set (BUMP_GENERATIONS). */
const TIME = /^\d{13}$/;
/** A miss' generation: the alias' (maybe none) and the host's, behind a `/`. */
const generationMatching = (pattern: RegExp) => expect.stringMatching(pattern) as unknown;

/** A lookup as the link host makes it: inside its script (LOOKUP_ENTRY_LUA), read by the cache. */
async function lookupInScript(cache: LinkCache, ref: LinkRef): Promise<CacheLookup> {
  const keys = linkCacheKeys(env.redisPrefix, ref);
  const [entry, generation] = (await redis.eval(
    `${LOOKUP_ENTRY_LUA}\nreturn { lookUpEntry(KEYS[1], KEYS[2], KEYS[3]) }`,
    3,
    keys.entry,
    keys.generation,
    keys.hostGeneration,
  )) as unknown[];
  return cache.lookupOfReply(ref, entry, generation);
}

/**
 * A fill under the generation `stale` read is refused; the next lookup misses with `next`, and a
 * fill under that one is kept.
 */
async function expectStaleFillDropped(
  cache: LinkCache,
  ref: LinkRef,
  stale: string | null,
  next: RegExp,
): Promise<void> {
  expect(await cache.fill(ref, stale, null)).toBe(false);
  const retry = await cache.lookup(ref);
  expect(retry).toEqual({ kind: 'miss', generation: generationMatching(next) });
  if (retry.kind !== 'miss') throw new Error('expected a miss');
  expect(await cache.fill(ref, retry.generation, null)).toBe(true);
  expect(await cache.lookup(ref)).toEqual(NEGATIVE_HIT);
}

describe('LinkCache.invalidateHost', () => {
  it("drops every entry of the host and bumps each alias' generation", async () => {
    const cache = newCache();
    const host = freshHost();
    // Whatever an entry holds: a resolution of any format, or "no such alias".
    await redis.set(linkCacheKeys(env.redisPrefix, at(host, 'a')).entry, 'any entry', 'EX', 300);
    await cache.fill(at(host, 'b'), null, null);
    await cache.invalidate([at(host, 'c')]);
    const cKeys = linkCacheKeys(env.redisPrefix, at(host, 'c'));
    const cBefore = Number(await redis.get(cKeys.generation));
    expect(await cache.fill(at(host, 'c'), String(cBefore), null)).toBe(true);

    expect(await cache.invalidateHost(host)).toBe(3);

    const entries = ['a', 'b', 'c'].map((alias) => linkCacheKeys(env.redisPrefix, at(host, alias)));
    expect(await redis.exists(...entries.map((keys) => keys.entry))).toBe(0);
    const generations = await redis.mget(...entries.map((keys) => keys.generation));
    for (const generation of generations) expect(generation).toMatch(TIME);
    // A generation only grows: c's second one is above its first, whatever the clock did.
    expect(Number(generations[2])).toBeGreaterThan(cBefore);
    const generationTtl = await redis.pttl(
      linkCacheKeys(env.redisPrefix, at(host, 'a')).generation,
    );
    expect(generationTtl).toBeGreaterThan(0);
  });

  it("leaves the other environment's host and other hosts untouched", async () => {
    const cache = newCache();
    const host = freshHost();
    const neighbours: LinkRef[] = [
      // The same app's other host.
      at({ ...host, environment: 'test' }, 'a'),
      // Subdomain keys that extend this one: the pattern must stop at the separator.
      at({ ...host, subdomainKey: `${host.subdomainKey}x` }, 'a'),
      at({ ...host, subdomainKey: `${host.subdomainKey}-test` }, 'a'),
      at(freshHost(), 'a'),
    ];
    await cache.fill(at(host, 'a'), null, null);
    for (const ref of neighbours) await cache.fill(ref, null, null);

    expect(await cache.invalidateHost(host)).toBe(1);

    // The alias' generation and the host's, both bumped.
    expect(await cache.lookup(at(host, 'a'))).toEqual({
      kind: 'miss',
      generation: generationMatching(/^\d{13}\/\d{13}$/),
    });
    for (const ref of neighbours) {
      expect({ ref, found: await cache.lookup(ref) }).toEqual({ ref, found: NEGATIVE_HIT });
    }
  });

  it('goes through every SCAN batch of a host with thousands of cached aliases', async () => {
    const cache = newCache();
    const host = freshHost();
    const aliases = Array.from({ length: 2_500 }, (_, i) => `a${i}`);
    const fill = redis.pipeline();
    for (const alias of aliases) {
      fill.set(linkCacheKeys(env.redisPrefix, at(host, alias)).entry, 'x', 'EX', 300);
    }
    await fill.exec();

    expect(await cache.invalidateHost(host)).toBe(aliases.length);

    const left = await redis.exists(
      ...aliases.map((alias) => linkCacheKeys(env.redisPrefix, at(host, alias)).entry),
    );
    expect(left).toBe(0);
    const generations = await redis.mget(
      ...aliases.map((alias) => linkCacheKeys(env.redisPrefix, at(host, alias)).generation),
    );
    for (const generation of generations) expect(generation).toMatch(TIME);
  });

  it('drops a fill that read Postgres before the invalidation landed', async () => {
    const cache = newCache();
    const host = freshHost();
    const ref = at(host, 'promo');
    const lookup = await cache.lookup(ref);
    if (lookup.kind !== 'miss') throw new Error('expected a miss');
    // Another replica caches the alias, then the operator commits and invalidates the host,
    // all while this filler's query is in flight.
    await cache.fill(ref, null, null);
    await cache.invalidateHost(host);

    await expectStaleFillDropped(cache, ref, lookup.generation, /^\d{13}\/\d{13}$/);
  });

  it('drops a fill that read Postgres before the invalidation, of an alias nobody had cached', async () => {
    const cache = newCache();
    const host = freshHost();
    const ref = at(host, 'promo');
    // A redirect misses (through its script's lookup, as the link host does) and reads
    // Postgres; the operator commits and invalidates the host, whose SCAN finds no entry of it.
    const lookup = await lookupInScript(cache, ref);
    if (lookup.kind !== 'miss') throw new Error('expected a miss');
    expect(await cache.invalidateHost(host)).toBe(0);

    // What it read is older than the change: dropped, not served for the positive TTL.
    await expectStaleFillDropped(cache, ref, lookup.generation, /^\/\d{13}$/);
  });

  it('finds nothing to do on a host with nothing cached', async () => {
    const cache = newCache();
    expect(await cache.invalidateHost(freshHost())).toBe(0);
  });

  it('matches its own prefix literally, glob characters included', async () => {
    // `[ab]` unescaped would also match the prefixes `…:a` and `…:b`.
    const base = `${env.redisPrefix}:${randomUUID().slice(0, 8)}`;
    const globby = newCache(`${base}:[ab]`);
    const plain = newCache(`${base}:a`);
    const host = freshHost();
    await globby.fill(at(host, 'x'), null, null);
    await plain.fill(at(host, 'x'), null, null);

    expect(await globby.invalidateHost(host)).toBe(1);

    expect(await globby.lookup(at(host, 'x'))).toMatchObject({ kind: 'miss' });
    expect(await plain.lookup(at(host, 'x'))).toEqual(NEGATIVE_HIT);
  });
});
