import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { testEnvironment } from '@linkservice/testing';
import type { ClickTarget } from './link-cache';
import { LinkCache } from './link-cache';
import {
  CLICK_TOKEN_TOMBSTONE,
  ClickTokenStore,
  clickTokenKey,
  hashClickToken,
} from './click-tokens';
import { NOT_WRITABLE_MESSAGE, RedisCallError } from './redis-calls';
import type { LinkRef } from './keys';
import { linkCacheKeys } from './keys';
import type { LinkResolution } from './resolution';
import { redirectsAt } from './resolution';

const env = testEnvironment();
let redis: Redis;

beforeAll(() => {
  redis = new Redis(env.redisUrl);
});
afterAll(async () => {
  await redis.quit();
});

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
    const cache = new LinkCache(redis, env.redisPrefix, {
      positiveSeconds: 300,
      negativeSeconds: 7,
    });
    const ref = freshRef();
    await cache.fill(ref, null, null);
    expect(await cache.lookup(ref)).toEqual({ kind: 'hit', resolution: null });
    const ttl = await redis.pttl(linkCacheKeys(env.redisPrefix, ref).entry);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(7000);
  });

  it('uses the positive TTL for a resolution', async () => {
    const cache = new LinkCache(redis, env.redisPrefix, {
      positiveSeconds: 60,
      negativeSeconds: 7,
    });
    const ref = freshRef();
    await cache.fill(ref, null, resolution);
    const ttl = await redis.pttl(linkCacheKeys(env.redisPrefix, ref).entry);
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

    expect(await cache.lookup(a)).toEqual({ kind: 'miss', generation: '1' });
    expect(await cache.lookup(b)).toEqual({ kind: 'miss', generation: '1' });
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
    expect(next).toEqual({ kind: 'miss', generation: '1' });
    if (next.kind !== 'miss') throw new Error('expected a miss');
    expect(await cache.fill(ref, next.generation, resolution)).toBe(true);
    expect(await cache.lookup(ref)).toEqual({ kind: 'hit', resolution });
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

  describe('lookupCountingClick', () => {
    // Before `resolution` expires.
    const now = Date.UTC(2029, 0, 1);
    const clicksOf = async (hash: string, linkId: string) =>
      Number((await redis.hget(hash, linkId)) ?? 0);
    const TOKEN_TTL_MS = 60_000;
    /** A click at `at`, with a token of its own. */
    const click = (hash: string, at = now): ClickTarget => ({
      hash,
      at,
      tokenHash: hashClickToken(randomUUID()),
      tokenTtlMs: TOKEN_TTL_MS,
    });
    const tokenKey = (target: ClickTarget) => clickTokenKey(env.redisPrefix, target.tokenHash);
    /** What a click's token key holds (null: nothing was stored). */
    const tokenOf = (target: ClickTarget) => redis.get(tokenKey(target));

    it('counts a hit that redirects in the same round trip, and only when asked to', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const ref = freshRef();
      const hash = `${env.redisPrefix}:clicks-${randomUUID()}`;
      await cache.fill(ref, null, resolution);

      const first = click(hash);
      expect(await cache.lookupCountingClick(ref, first)).toEqual({
        lookup: { kind: 'hit', resolution },
        counted: true,
      });
      const second = click(hash, now + 5);
      expect(await cache.lookupCountingClick(ref, second)).toMatchObject({
        counted: true,
      });
      expect(await cache.lookupCountingClick(ref, null)).toEqual({
        lookup: { kind: 'hit', resolution },
        counted: false,
      });
      expect(await clicksOf(hash, resolution.linkId)).toBe(2);
      // Each counted click's token: its link and its click time, expiring with the token.
      expect(await tokenOf(first)).toBe(`${resolution.linkId} ${now}`);
      expect(await tokenOf(second)).toBe(`${resolution.linkId} ${now + 5}`);
      const ttl = await redis.pttl(tokenKey(first));
      expect(ttl).toBeGreaterThan(TOKEN_TTL_MS - 5_000);
      expect(ttl).toBeLessThanOrEqual(TOKEN_TTL_MS);
    });

    it('counts a click once per token: a lookup run again with the same token counts nothing more', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const ref = freshRef();
      const hash = `${env.redisPrefix}:clicks-${randomUUID()}`;
      await cache.fill(ref, null, resolution);
      const once = click(hash);
      // The same call again, as ioredis resending it or a timed-out call running late would.
      for (let run = 0; run < 3; run++) {
        expect(await cache.lookupCountingClick(ref, once)).toMatchObject({ counted: true });
      }
      expect(await clicksOf(hash, resolution.linkId)).toBe(1);
      expect(await tokenOf(once)).toBe(`${resolution.linkId} ${now}`);
    });

    it('counts nothing and keeps the tombstone when the token was used up before its click ran late', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const tokens = new ClickTokenStore(redis, env.redisPrefix);
      const ref = freshRef();
      const hash = `${env.redisPrefix}:clicks-${randomUUID()}`;
      await cache.fill(ref, null, resolution);
      const used = click(hash);
      await cache.lookupCountingClick(ref, used);
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
      expect(await cache.lookupCountingClick(ref, used)).toMatchObject({ counted: true });
      expect(await clicksOf(hash, resolution.linkId)).toBe(1);
      expect(await tokens.find([used.tokenHash])).toEqual([null]);
      expect(await tokenOf(used)).toBe(CLICK_TOKEN_TOMBSTONE);
    });

    it('forgets only tokens that exist: an expired or unknown one gets no key', async () => {
      const tokens = new ClickTokenStore(redis, env.redisPrefix);
      const unknown = hashClickToken(randomUUID());
      await tokens.forget([unknown]);
      expect(await redis.exists(clickTokenKey(env.redisPrefix, unknown))).toBe(0);
    });

    it('counts nothing on a miss or a negative entry, and gives the generation for a fill', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const ref = freshRef();
      const hash = `${env.redisPrefix}:clicks-${randomUUID()}`;
      expect(await cache.lookupCountingClick(ref, click(hash))).toEqual({
        lookup: { kind: 'miss', generation: null },
        counted: false,
      });
      await cache.invalidate([ref]);
      const miss = await cache.lookupCountingClick(ref, click(hash));
      expect(miss).toEqual({ lookup: { kind: 'miss', generation: '1' }, counted: false });
      await cache.fill(ref, '1', null);
      expect(await cache.lookupCountingClick(ref, click(hash))).toEqual({
        lookup: { kind: 'hit', resolution: null },
        counted: false,
      });
      expect(await redis.exists(hash)).toBe(0);
    });

    it('counts nothing for an unreadable entry, which is a miss', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const ref = freshRef();
      const hash = `${env.redisPrefix}:clicks-${randomUUID()}`;
      await redis.set(linkCacheKeys(env.redisPrefix, ref).entry, '{"i":"lnk_1","a":false}');
      expect(await cache.lookupCountingClick(ref, click(hash))).toEqual({
        lookup: { kind: 'miss', generation: null },
        counted: false,
      });
      expect(await redis.exists(hash)).toBe(0);
    });

    it('reads an entry of the format before title and iosDeferredPage as a miss, its click and token counted once', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const ref = freshRef();
      const hash = `${env.redisPrefix}:clicks-${randomUUID()}`;
      // Exactly what the previous release wrote for `resolution`.
      const previous = `${resolution.expiresAt} lnk_1 {"w":"https://example.com/web","s":null,"e":${resolution.expiresAt},"a":false}`;
      await redis.set(linkCacheKeys(env.redisPrefix, ref).entry, previous);
      const target = click(hash);
      // Same leading fields: the script counts the click (the caller must not count again).
      expect(await cache.lookupCountingClick(ref, target)).toEqual({
        lookup: { kind: 'miss', generation: null },
        counted: true,
      });
      expect(await cache.lookup(ref)).toEqual({ kind: 'miss', generation: null });
      expect(await redis.hgetall(hash)).toEqual({ lnk_1: '1' });
      expect(await tokenOf(target)).toBe(`lnk_1 ${now}`);
    });

    it('answers the lookups of one event-loop turn with one script call, each its own', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const hash = `${env.redisPrefix}:clicks-${randomUUID()}`;
      const [hit, expired, negative, unknown] = [freshRef(), freshRef(), freshRef(), freshRef()];
      const expiredLink = { ...resolution, linkId: 'lnk_2', expiresAt: now - 1 };
      await cache.fill(hit, null, resolution);
      await cache.fill(expired, null, expiredLink);
      await cache.fill(negative, null, null);
      await cache.invalidate([unknown]);
      const [firstHit, secondHit] = [click(hash), click(hash)];
      const uncounted = [click(hash), click(hash), click(hash)];
      const calls = jest.spyOn(redis, 'evalsha');
      try {
        const answers = await Promise.all([
          cache.lookupCountingClick(hit, firstHit),
          cache.lookupCountingClick(expired, uncounted[0]),
          cache.lookupCountingClick(negative, uncounted[1]),
          cache.lookupCountingClick(unknown, uncounted[2]),
          cache.lookupCountingClick(hit, null),
          cache.lookupCountingClick(hit, secondHit),
        ]);
        expect(calls).toHaveBeenCalledTimes(1);
        expect(answers).toEqual([
          { lookup: { kind: 'hit', resolution }, counted: true },
          { lookup: { kind: 'hit', resolution: expiredLink }, counted: false },
          { lookup: { kind: 'hit', resolution: null }, counted: false },
          { lookup: { kind: 'miss', generation: '1' }, counted: false },
          { lookup: { kind: 'hit', resolution }, counted: false },
          { lookup: { kind: 'hit', resolution }, counted: true },
        ]);
      } finally {
        calls.mockRestore();
      }
      // Only the two counted clicks left a token.
      expect(await redis.hgetall(hash)).toEqual({ [resolution.linkId]: '2' });
      expect(await tokenOf(firstHit)).toBe(`${resolution.linkId} ${now}`);
      expect(await tokenOf(secondHit)).toBe(`${resolution.linkId} ${now}`);
      for (const target of uncounted) expect(await tokenOf(target)).toBeNull();
    });

    it('sends lookups counting into different hashes as separate calls, each counted where asked', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const ref = freshRef();
      await cache.fill(ref, null, resolution);
      const [one, two] = [
        `${env.redisPrefix}:clicks-${randomUUID()}`,
        `${env.redisPrefix}:clicks-${randomUUID()}`,
      ];
      const targets = [click(one), click(two), click(one)];
      const calls = jest.spyOn(redis, 'evalsha');
      try {
        const answers = await Promise.all([
          ...targets.map((target) => cache.lookupCountingClick(ref, target)),
          cache.lookupCountingClick(ref, null),
        ]);
        expect(answers.map((answer) => answer.counted)).toEqual([true, true, true, false]);
        expect(calls).toHaveBeenCalledTimes(2);
      } finally {
        calls.mockRestore();
      }
      expect(await clicksOf(one, resolution.linkId)).toBe(2);
      expect(await clicksOf(two, resolution.linkId)).toBe(1);
      for (const target of targets)
        expect(await tokenOf(target)).toBe(`${resolution.linkId} ${now}`);
    });

    it('gives an entry it cannot read the generation a fill needs', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const ref = freshRef();
      await cache.invalidate([ref]);
      await redis.set(linkCacheKeys(env.redisPrefix, ref).entry, 'not an entry');
      const found = await cache.lookupCountingClick(
        ref,
        click(`${env.redisPrefix}:clicks-${randomUUID()}`),
      );
      expect(found).toEqual({ lookup: { kind: 'miss', generation: '1' }, counted: false });
      // A fill with that generation replaces the unreadable entry.
      expect(await cache.fill(ref, '1', resolution)).toBe(true);
      expect(await cache.lookup(ref)).toEqual({ kind: 'hit', resolution });
    });

    it('fails every lookup of a call that fails, saying whether it may have run, and later calls work again', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
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
            cache.lookupCountingClick(ref, null),
            cache.lookupCountingClick(freshRef(), null),
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
        expect(await cache.lookupCountingClick(ref, null)).toEqual({
          lookup: { kind: 'hit', resolution },
          counted: false,
        });
      } finally {
        calls.mockRestore();
      }
    });

    it('fails every lookup of a call whose reply cannot be read, instead of leaving them waiting', async () => {
      const cache = new LinkCache(redis, env.redisPrefix);
      const calls = jest.spyOn(redis, 'evalsha').mockResolvedValueOnce(null);
      try {
        const answers = await Promise.allSettled([
          cache.lookupCountingClick(freshRef(), null),
          cache.lookupCountingClick(freshRef(), null),
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
      const cache = new LinkCache(redis, env.redisPrefix);
      const ref = freshRef();
      const hash = `${env.redisPrefix}:clicks-${randomUUID()}`;
      const link = { ...resolution, ...fields };
      const at = now + offset;
      await cache.fill(ref, null, link);
      const target = click(hash, at);
      const { lookup, counted } = await cache.lookupCountingClick(ref, target);
      expect(lookup).toEqual({ kind: 'hit', resolution: link });
      expect(counted).toBe(redirectsAt(link, at));
      expect(await clicksOf(hash, link.linkId)).toBe(counted ? 1 : 0);
      expect(await tokenOf(target)).toBe(counted ? `${link.linkId} ${at}` : null);
    });
  });
});
