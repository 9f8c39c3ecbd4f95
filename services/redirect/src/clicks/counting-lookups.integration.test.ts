import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { LinkRef, LinkResolution } from '@linkservice/link-cache';
import {
  CLICK_TOKEN_TOMBSTONE,
  ClickTokenStore,
  LinkCache,
  clickKeys,
  LINK_HOST_SHARDS,
  clickTokenKey,
  hashClickToken,
  linkCacheKeys,
  redirectsAt,
} from '@linkservice/link-cache';
import { testEnvironment } from '@linkservice/testing';
import { NOT_WRITABLE_MESSAGE, RedisCallError } from '../redis-calls';
import type { LookupClick } from './counting-lookups';
import { CountingLookups } from './counting-lookups';

const env = testEnvironment();
const redis = new Redis(env.redisUrl);
afterAll(() => redis.quit());

const TOKEN_TTL_MS = 60_000;
// Before `resolution` expires.
const now = Date.UTC(2029, 0, 1);
const resolution: LinkResolution = {
  linkId: 'lnk_1',
  webFallbackUrl: 'https://example.com/web',
  iosFallbackUrl: null,
  expiresAt: Date.UTC(2030, 0, 1),
  archived: false,
  title: 'Promo',
  iosDeferredPage: false,
};

/** Every test gets its own subdomain key, so nothing is shared between tests. */
function freshRef(alias = 'promo'): LinkRef {
  return { subdomainKey: `t${randomUUID().slice(0, 8)}`, environment: 'live', alias };
}

/** A click at `at`, with a token of its own. */
const click = (at = now): LookupClick => ({
  tokenHash: hashClickToken(randomUUID()),
  at,
  analytics: null,
});

/** A deployment of its own (REDIS_PREFIX), so each test has its own pending hash. */
function deployment() {
  const prefix = `${env.redisPrefix}:${randomUUID().slice(0, 8)}`;
  const cache = new LinkCache(redis, prefix);
  const tokenKey = (target: LookupClick) => clickTokenKey(prefix, target.tokenHash);
  /** Every shard's pending clicks, summed per link id (a test's tokens are in any shard). */
  const pending = async (): Promise<Record<string, string>> => {
    const sum: Record<string, string> = {};
    for (let shard = 0; shard < LINK_HOST_SHARDS; shard += 1) {
      const hash = await redis.hgetall(clickKeys(prefix, shard).pending);
      for (const [id, n] of Object.entries(hash))
        sum[id] = String(Number(sum[id] ?? 0) + Number(n));
    }
    return sum;
  };
  return {
    prefix,
    cache,
    lookups: new CountingLookups({ redis, cache, redisPrefix: prefix, tokenTtlMs: TOKEN_TTL_MS }),
    pending,
    tokenKey,
    clicksOf: async (linkId: string) => Number((await pending())[linkId] ?? 0),
    /** What a click's token key holds (null: nothing was stored). */
    tokenOf: (target: LookupClick) => redis.get(tokenKey(target)),
  };
}

/** A generation: Redis' time in ms when it was set (LinkCache.invalidate). */
const A_TIME = expect.stringMatching(/^\d{13}$/) as unknown;

describe('CountingLookups', () => {
  it('counts a hit that redirects in the same round trip, and only when asked to', async () => {
    const { cache, lookups, clicksOf, tokenOf, tokenKey } = deployment();
    const ref = freshRef();
    await cache.fill(ref, null, resolution);

    const first = click();
    expect(await lookups.lookUp(ref, first)).toEqual({
      lookup: { kind: 'hit', resolution },
      counted: true,
    });
    const second = click(now + 5);
    expect(await lookups.lookUp(ref, second)).toMatchObject({ counted: true });
    expect(await lookups.lookUp(ref, null)).toEqual({
      lookup: { kind: 'hit', resolution },
      counted: false,
    });
    expect(await clicksOf(resolution.linkId)).toBe(2);
    // Each counted click's token: its link and its click time, expiring with the token.
    expect(await tokenOf(first)).toBe(`${resolution.linkId} ${now}`);
    expect(await tokenOf(second)).toBe(`${resolution.linkId} ${now + 5}`);
    const ttl = await redis.pttl(tokenKey(first));
    expect(ttl).toBeGreaterThan(TOKEN_TTL_MS - 5_000);
    expect(ttl).toBeLessThanOrEqual(TOKEN_TTL_MS);
  });

  it('counts a click once per token: a lookup run again with the same token counts nothing more', async () => {
    const { cache, lookups, clicksOf, tokenOf } = deployment();
    const ref = freshRef();
    await cache.fill(ref, null, resolution);
    const once = click();
    // The same call again, as ioredis resending it or a timed-out call running late would.
    for (let run = 0; run < 3; run++) {
      expect(await lookups.lookUp(ref, once)).toMatchObject({ counted: true });
    }
    expect(await clicksOf(resolution.linkId)).toBe(1);
    expect(await tokenOf(once)).toBe(`${resolution.linkId} ${now}`);
  });

  it('counts nothing and keeps the tombstone when the token was used up before its click ran late', async () => {
    const { prefix, cache, lookups, clicksOf, tokenOf, tokenKey } = deployment();
    const tokens = new ClickTokenStore(redis, prefix);
    const ref = freshRef();
    await cache.fill(ref, null, resolution);
    const used = click();
    await lookups.lookUp(ref, used);
    expect(await tokens.find([used.tokenHash])).toEqual([
      { linkId: resolution.linkId, clickedAt: now },
    ]);

    await tokens.forget([used.tokenHash]);
    // Used up: no record to find, but the key stays with the time it had left.
    expect(await tokens.find([used.tokenHash])).toEqual([null]);
    expect(await tokenOf(used)).toBe(CLICK_TOKEN_TOMBSTONE);
    const ttl = await redis.pttl(tokenKey(used));
    expect(ttl).toBeGreaterThan(TOKEN_TTL_MS - 5_000);
    expect(ttl).toBeLessThanOrEqual(TOKEN_TTL_MS);
    // The same click counted again (late): nothing more counted, nothing brought back.
    expect(await lookups.lookUp(ref, used)).toMatchObject({ counted: true });
    expect(await clicksOf(resolution.linkId)).toBe(1);
    expect(await tokens.find([used.tokenHash])).toEqual([null]);
    expect(await tokenOf(used)).toBe(CLICK_TOKEN_TOMBSTONE);
  });

  it('counts nothing on a miss or a negative entry, and gives the generation for a fill', async () => {
    const { cache, lookups, pending } = deployment();
    const ref = freshRef();
    expect(await lookups.lookUp(ref, click())).toEqual({
      lookup: { kind: 'miss', generation: null },
      counted: false,
    });
    await cache.invalidate([ref]);
    const miss = await lookups.lookUp(ref, click());
    expect(miss).toEqual({ lookup: { kind: 'miss', generation: A_TIME }, counted: false });
    if (miss.lookup.kind !== 'miss') throw new Error('expected a miss');
    expect(await cache.fill(ref, miss.lookup.generation, null)).toBe(true);
    expect(await lookups.lookUp(ref, click())).toEqual({
      lookup: { kind: 'hit', resolution: null },
      counted: false,
    });
    expect(await pending()).toEqual({});
  });

  it('counts nothing for an unreadable entry, which is a miss', async () => {
    const { prefix, lookups, pending } = deployment();
    const ref = freshRef();
    await redis.set(linkCacheKeys(prefix, ref).entry, '{"i":"lnk_1","a":false}');
    expect(await lookups.lookUp(ref, click())).toEqual({
      lookup: { kind: 'miss', generation: null },
      counted: false,
    });
    expect(await pending()).toEqual({});
  });

  it('reads an entry of the format before title and iosDeferredPage as a miss, its click and token counted once', async () => {
    const { prefix, cache, lookups, pending, tokenOf } = deployment();
    const ref = freshRef();
    // Exactly what the previous release wrote for `resolution`.
    const previous = `${resolution.expiresAt} lnk_1 {"w":"https://example.com/web","s":null,"e":${resolution.expiresAt},"a":false}`;
    await redis.set(linkCacheKeys(prefix, ref).entry, previous);
    const target = click();
    // Same leading fields: the script counts the click (the caller must not count again).
    expect(await lookups.lookUp(ref, target)).toEqual({
      lookup: { kind: 'miss', generation: null },
      counted: true,
    });
    expect(await cache.lookup(ref)).toEqual({ kind: 'miss', generation: null });
    expect(await pending()).toEqual({ lnk_1: '1' });
    expect(await tokenOf(target)).toBe(`lnk_1 ${now}`);
  });

  it('answers the lookups of one event-loop turn with one script call, each its own', async () => {
    const { cache, lookups, pending, tokenOf } = deployment();
    const [hit, expired, negative, unknown] = [freshRef(), freshRef(), freshRef(), freshRef()];
    const expiredLink = { ...resolution, linkId: 'lnk_2', expiresAt: now - 1 };
    await cache.fill(hit, null, resolution);
    await cache.fill(expired, null, expiredLink);
    await cache.fill(negative, null, null);
    await cache.invalidate([unknown]);
    const [firstHit, secondHit] = [click(), click()];
    const uncounted = [click(), click(), click()];
    const calls = jest.spyOn(redis, 'evalsha');
    try {
      const answers = await Promise.all([
        lookups.lookUp(hit, firstHit),
        lookups.lookUp(expired, uncounted[0]),
        lookups.lookUp(negative, uncounted[1]),
        lookups.lookUp(unknown, uncounted[2]),
        lookups.lookUp(hit, null),
        lookups.lookUp(hit, secondHit),
      ]);
      expect(calls).toHaveBeenCalledTimes(1);
      expect(answers).toEqual([
        { lookup: { kind: 'hit', resolution }, counted: true },
        { lookup: { kind: 'hit', resolution: expiredLink }, counted: false },
        { lookup: { kind: 'hit', resolution: null }, counted: false },
        { lookup: { kind: 'miss', generation: A_TIME }, counted: false },
        { lookup: { kind: 'hit', resolution }, counted: false },
        { lookup: { kind: 'hit', resolution }, counted: true },
      ]);
    } finally {
      calls.mockRestore();
    }
    // Only the two counted clicks left a token.
    expect(await pending()).toEqual({ [resolution.linkId]: '2' });
    expect(await tokenOf(firstHit)).toBe(`${resolution.linkId} ${now}`);
    expect(await tokenOf(secondHit)).toBe(`${resolution.linkId} ${now}`);
    for (const target of uncounted) expect(await tokenOf(target)).toBeNull();
  });

  it('sends a burst in calls of 64 lookups, each counted and answered', async () => {
    const { cache, lookups, clicksOf, tokenOf } = deployment();
    const ref = freshRef();
    await cache.fill(ref, null, resolution);
    const targets = Array.from({ length: 65 }, () => click());
    const calls = jest.spyOn(redis, 'evalsha');
    try {
      const answers = await Promise.all(targets.map((target) => lookups.lookUp(ref, target)));
      expect(answers.every((answer) => answer.counted)).toBe(true);
      expect(calls).toHaveBeenCalledTimes(2);
    } finally {
      calls.mockRestore();
    }
    expect(await clicksOf(resolution.linkId)).toBe(65);
    for (const target of targets) expect(await tokenOf(target)).toBe(`${resolution.linkId} ${now}`);
  });

  it('gives an entry it cannot read the generation a fill needs', async () => {
    const { prefix, cache, lookups } = deployment();
    const ref = freshRef();
    await cache.invalidate([ref]);
    await redis.set(linkCacheKeys(prefix, ref).entry, 'not an entry');
    const found = await lookups.lookUp(ref, click());
    expect(found).toEqual({ lookup: { kind: 'miss', generation: A_TIME }, counted: false });
    if (found.lookup.kind !== 'miss') throw new Error('expected a miss');
    // A fill with that generation replaces the unreadable entry.
    expect(await cache.fill(ref, found.lookup.generation, resolution)).toBe(true);
    expect(await cache.lookup(ref)).toEqual({ kind: 'hit', resolution });
  });

  it('fails every lookup of a call that fails, saying whether it may have run, and later calls work again', async () => {
    const { cache, lookups } = deployment();
    const ref = freshRef();
    await cache.fill(ref, null, resolution);
    const timeout = new Error('Command timed out');
    const refused = new Error(NOT_WRITABLE_MESSAGE);
    const calls = jest
      .spyOn(redis, 'evalsha')
      .mockRejectedValueOnce(timeout)
      .mockRejectedValueOnce(refused);
    try {
      const failuresOf = async () => {
        const answers = await Promise.allSettled([
          lookups.lookUp(ref, null),
          lookups.lookUp(freshRef(), null),
        ]);
        return answers.map((answer) => {
          const reason: unknown = answer.status === 'rejected' ? answer.reason : undefined;
          return reason instanceof RedisCallError ? [reason.failure, reason.cause] : answer;
        });
      };
      expect(await failuresOf()).toEqual([
        ['uncertain', timeout],
        ['uncertain', timeout],
      ]);
      expect(await failuresOf()).toEqual([
        ['not-sent', refused],
        ['not-sent', refused],
      ]);
      expect(await lookups.lookUp(ref, null)).toEqual({
        lookup: { kind: 'hit', resolution },
        counted: false,
      });
    } finally {
      calls.mockRestore();
    }
  });

  it('fails every lookup of a call whose reply cannot be read, instead of leaving them waiting', async () => {
    const { lookups } = deployment();
    const calls = jest.spyOn(redis, 'evalsha').mockResolvedValueOnce(null);
    try {
      const answers = await Promise.allSettled([
        lookups.lookUp(freshRef(), null),
        lookups.lookUp(freshRef(), null),
      ]);
      expect(answers.map((answer) => answer.status)).toEqual(['rejected', 'rejected']);
    } finally {
      calls.mockRestore();
    }
  });

  // The script reads the stored `redirectsUntil`; the redirect service decides with
  // redirectsAt. They must agree, or a click is counted for a 410 (or lost for a 302).
  it.each([
    ['no expiry', { expiresAt: null, archived: false }, 0],
    ['expiring later', { expiresAt: now + 1, archived: false }, 0],
    ['expiring now', { expiresAt: now, archived: false }, 0],
    ['expired', { expiresAt: now - 1, archived: false }, 0],
    ['archived, expired', { expiresAt: now - 1, archived: true }, 0],
    ['archived, no expiry', { expiresAt: null, archived: true }, 0],
    ['expiring in a millisecond, one later', { expiresAt: now + 1, archived: false }, 1],
  ])('counts exactly when redirectsAt holds: %s', async (_name, fields, offset) => {
    const { cache, lookups, clicksOf, tokenOf } = deployment();
    const ref = freshRef();
    const link = { ...resolution, ...fields };
    const at = now + offset;
    await cache.fill(ref, null, link);
    const target = click(at);
    const { lookup, counted } = await lookups.lookUp(ref, target);
    expect(lookup).toEqual({ kind: 'hit', resolution: link });
    expect(counted).toBe(redirectsAt(link, at));
    expect(await clicksOf(link.linkId)).toBe(counted ? 1 : 0);
    expect(await tokenOf(target)).toBe(counted ? `${link.linkId} ${at}` : null);
  });
});
