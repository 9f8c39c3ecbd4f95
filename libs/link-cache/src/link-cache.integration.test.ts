import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { LINK_STATUS_CASES } from '@linkservice/contracts';
import { testEnvironment } from '@linkservice/testing';
import type { LinkCacheTtl } from './link-cache';
import { LinkCache } from './link-cache';
import { CLICK_TOKEN_TOMBSTONE, ClickTokenStore, hashClickToken } from './click-token-store';
import type { LinkRef } from './link-host-keys';
import { clickTokenKey, linkCacheKeys } from './link-host-keys';
import { legacyClickTokenKey, legacyLinkCacheKeys } from './link-host-keys.compat';
import type { LinkResolution } from './resolution';
import { REDIRECTING_LINK_ID_LUA, encodeResolution, redirectsAt } from './resolution';

const env = testEnvironment();
const redis = new Redis(env.redisUrl);
afterAll(() => redis.quit());

/** Every test gets its own subdomain key, so nothing is shared between tests. */
function freshRef(alias = 'promo'): LinkRef {
  return { subdomainKey: `t${randomUUID().slice(0, 8)}`, environment: 'live', alias };
}

const resolution: LinkResolution = {
  linkId: 'lnk_1',
  webFallbackUrl: 'https://example.com/web',
  iosFallbackUrl: null,
  expiresAt: Date.UTC(2030, 0, 1),
  archived: false,
  title: 'Promo',
  iosDeferredPage: false,
};

/** Caches `value` for a fresh ref under the given TTLs; `ttl` is what its entry has left, in ms. */
async function fillFreshRef(value: LinkResolution | null, ttls: LinkCacheTtl) {
  const cache = new LinkCache(redis, env.redisPrefix, ttls);
  const ref = freshRef();
  await cache.fill(ref, null, value);
  const ttl = await redis.pttl(linkCacheKeys(env.redisPrefix, ref).entry);
  return { cache, ref, ttl };
}

/** A generation: Redis' time in ms when it was set (BUMP_GENERATIONS). */
const A_TIME = expect.stringMatching(/^\d{13}$/) as unknown;

describe('LinkCache', () => {
  it('misses, then serves what was filled', async () => {
    const cache = new LinkCache(redis, env.redisPrefix);
    const ref = freshRef();
    const first = await cache.lookup(ref);
    expect(first).toEqual({ kind: 'miss', generation: null });
    expect(await cache.fill(ref, null, resolution)).toBe(true);
    expect(await cache.lookup(ref)).toEqual({ kind: 'hit', resolution });
  });

  it('remembers a missing alias with the negative TTL', async () => {
    const { cache, ref, ttl } = await fillFreshRef(null, {
      positiveSeconds: 300,
      negativeSeconds: 7,
    });
    expect(await cache.lookup(ref)).toEqual({ kind: 'hit', resolution: null });
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(7000);
  });

  it('uses the positive TTL for a resolution', async () => {
    const { ttl } = await fillFreshRef(resolution, { positiveSeconds: 60, negativeSeconds: 7 });
    expect(ttl).toBeGreaterThan(7000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('invalidation drops positive and negative entries of the given refs only', async () => {
    const cache = new LinkCache(redis, env.redisPrefix);
    const a = freshRef('a');
    const b = { ...a, alias: 'b' };
    const other = { ...a, environment: 'test' as const };
    await cache.fill(a, null, resolution);
    await cache.fill(b, null, null);
    await cache.fill(other, null, resolution);

    await cache.invalidate([a, b]);

    expect(await cache.lookup(a)).toEqual({ kind: 'miss', generation: A_TIME });
    expect(await cache.lookup(b)).toEqual({ kind: 'miss', generation: A_TIME });
    expect(await cache.lookup(other)).toEqual({ kind: 'hit', resolution });
  });

  it('drops a fill that read Postgres before an invalidation landed', async () => {
    const cache = new LinkCache(redis, env.redisPrefix);
    const ref = freshRef();
    const lookup = await cache.lookup(ref);
    if (lookup.kind !== 'miss') throw new Error('expected a miss');
    // A writer commits and invalidates while this filler's query is in flight.
    await cache.invalidate([ref]);
    expect(await cache.fill(ref, lookup.generation, resolution)).toBe(false);
    const next = await cache.lookup(ref);
    expect(next).toEqual({ kind: 'miss', generation: A_TIME });
    if (next.kind !== 'miss') throw new Error('expected a miss');
    expect(await cache.fill(ref, next.generation, resolution)).toBe(true);
    expect(await cache.lookup(ref)).toEqual({ kind: 'hit', resolution });
  });

  it('also drops the entry a 0.1 redirect filled under its key, on a single Redis (compat)', async () => {
    const cache = new LinkCache(redis, env.redisPrefix);
    const ref = freshRef();
    const legacy = legacyLinkCacheKeys(env.redisPrefix, ref);
    await redis.set(legacy.entry, encodeResolution(resolution));
    await redis.set(legacy.generation, '4');
    await cache.invalidate([ref]);
    expect(await redis.exists(legacy.entry)).toBe(0);
    // The 0.1 filler that looked up generation 4 before the change has its fill dropped.
    expect(await redis.get(legacy.generation)).not.toBe('4');
    await redis.del(legacy.generation, linkCacheKeys(env.redisPrefix, ref).generation);
  });

  it('treats an unreadable entry as a miss', async () => {
    const cache = new LinkCache(redis, env.redisPrefix);
    const ref = freshRef();
    await redis.set(linkCacheKeys(env.redisPrefix, ref).entry, '{"old":"format"}');
    expect(await cache.lookup(ref)).toEqual({ kind: 'miss', generation: null });
  });

  it('invalidating nothing is a no-op', async () => {
    await expect(new LinkCache(redis, env.redisPrefix).invalidate([])).resolves.toBeUndefined();
  });

  it('reads a LOOKUP_ENTRY_LUA reply as lookup would, an unreadable entry with a second round trip', async () => {
    const cache = new LinkCache(redis, env.redisPrefix);
    const ref = freshRef();
    await cache.invalidate([ref]);
    const generation = await redis.get(linkCacheKeys(env.redisPrefix, ref).generation);
    expect(generation).toMatch(/^\d{13}$/);
    // An entry: no generation read (0).
    const entry = await cache.lookupOfReply(ref, ' lnk_1 {}', 0);
    expect(entry).toEqual({ kind: 'miss', generation });
    expect(cache.lookupOfReply(ref, null, '1')).toEqual({ kind: 'miss', generation: '1' });
    expect(cache.lookupOfReply(ref, null, null)).toEqual({ kind: 'miss', generation: null });
    expect(await cache.fill(ref, generation, resolution)).toBe(true);
    expect(
      cache.lookupOfReply(ref, await redis.get(linkCacheKeys(env.redisPrefix, ref).entry), 0),
    ).toEqual({ kind: 'hit', resolution });
  });

  it('finds and forgets a token a 0.1 redirect stored under its key, on a single Redis (compat)', async () => {
    const tokens = new ClickTokenStore(redis, env.redisPrefix);
    const legacyHash = hashClickToken(randomUUID());
    const currentHash = hashClickToken(randomUUID());
    await redis.set(
      legacyClickTokenKey(env.redisPrefix, legacyHash),
      'lnk_old 1700000000000',
      'EX',
      60,
    );
    await redis.set(clickTokenKey(env.redisPrefix, currentHash), 'lnk_new 1700000000001', 'EX', 60);
    expect(await tokens.find([legacyHash, currentHash, hashClickToken('unknown')])).toEqual([
      { linkId: 'lnk_old', clickedAt: 1700000000000 },
      { linkId: 'lnk_new', clickedAt: 1700000000001 },
      null,
    ]);
    await tokens.forget([legacyHash, currentHash]);
    expect(await tokens.find([legacyHash, currentHash])).toEqual([null, null]);
    expect(await redis.get(legacyClickTokenKey(env.redisPrefix, legacyHash))).toBe(
      CLICK_TOKEN_TOMBSTONE,
    );
  });

  it('forgets only tokens that exist: an expired or unknown one gets no key', async () => {
    const tokens = new ClickTokenStore(redis, env.redisPrefix);
    const unknown = hashClickToken(randomUUID());
    await tokens.forget([unknown]);
    expect(await redis.exists(clickTokenKey(env.redisPrefix, unknown))).toBe(0);
  });
});

describe('REDIRECTING_LINK_ID_LUA', () => {
  const now = Date.UTC(2029, 0, 1);
  /** The Lua copy of `redirectsAt`, run in Redis over an entry: the link id, or null. */
  const redirectingLinkId = async (entry: string, at: number) =>
    (await redis.eval(
      `${REDIRECTING_LINK_ID_LUA}\nreturn redirectingLinkId(ARGV[1], ARGV[2])`,
      0,
      entry,
      at,
    )) as string | null;

  it.each(LINK_STATUS_CASES)(
    'follows the link-status rule, as redirectsAt does: $name',
    async ({ archivedAt, expiresAt, now: at, redirects }) => {
      const link = {
        ...resolution,
        archived: archivedAt !== null,
        expiresAt: expiresAt === null ? null : Date.parse(expiresAt),
      };
      expect(redirectsAt(link, Date.parse(at))).toBe(redirects);
      expect(await redirectingLinkId(encodeResolution(link), Date.parse(at))).toBe(
        redirects ? link.linkId : null,
      );
    },
  );

  it('agrees with redirectsAt over every expiry around the clock, archived or not', async () => {
    for (const archived of [false, true]) {
      for (const expiresAt of [null, now - 1, now, now + 1]) {
        const link = { ...resolution, expiresAt, archived };
        for (const at of [now - 1, now, now + 1]) {
          expect([
            archived,
            expiresAt,
            at,
            await redirectingLinkId(encodeResolution(link), at),
          ]).toEqual([archived, expiresAt, at, redirectsAt(link, at) ? link.linkId : null]);
        }
      }
    }
  });

  it('finds no link in the negative marker or an unreadable entry', async () => {
    expect(await redirectingLinkId(encodeResolution(null), now)).toBeNull();
    expect(await redirectingLinkId('{"i":"lnk_1"}', now)).toBeNull();
  });
});
