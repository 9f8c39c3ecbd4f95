import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { eventually, testEnvironment, unreachableRedis } from '@linkservice/testing';
import { CreationLimiter } from './creation-limiter';

const { redisUrl, redisPrefix } = testEnvironment();
let redis: Redis;

beforeAll(async () => {
  redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
});
afterAll(async () => {
  await redis.quit();
});

const newAppId = () => `app_${randomUUID()}`;
const limiterWith = (limitPerHour: number, windowSeconds?: number) =>
  new CreationLimiter({ redis, redisPrefix, limitPerHour, windowSeconds });

describe('CreationLimiter', () => {
  it('grants what fits, keeps the rest back and reports the window', async () => {
    const limiter = limiterWith(5);
    const appId = newAppId();

    const first = await limiter.reserve(appId, 3);
    expect(first).toEqual({ granted: 3, limit: 5, remaining: 2, resetSeconds: 3600 });

    const second = await limiter.reserve(appId, 4);
    expect(second).toMatchObject({ granted: 2, limit: 5, remaining: 0 });
    expect(second.resetSeconds).toBeGreaterThan(3590);
    expect(second.resetSeconds).toBeLessThanOrEqual(3600);

    const third = await limiter.reserve(appId, 1);
    expect(third).toMatchObject({ granted: 0, remaining: 0 });
    // The refused unit was given back: the counter sits exactly at the limit.
    expect(await redis.get(`${redisPrefix}:creation-limit:${appId}`)).toBe('5');
  });

  it('gives released units back to later reservations', async () => {
    const limiter = limiterWith(4);
    const appId = newAppId();
    await limiter.reserve(appId, 4);
    const afterRelease = await limiter.release(appId, 3);
    expect(afterRelease).toMatchObject({ remaining: 3 });
    expect(await limiter.reserve(appId, 5)).toMatchObject({ granted: 3, remaining: 0 });
  });

  it('keys the limit by app and under REDIS_PREFIX', async () => {
    const limiter = limiterWith(2);
    const [a, b] = [newAppId(), newAppId()];
    await limiter.reserve(a, 2);
    expect(await limiter.reserve(b, 2)).toMatchObject({ granted: 2 });
    const keys = await redis.keys(`${redisPrefix}:creation-limit:${a}`);
    expect(keys).toHaveLength(1);
  });

  it('starts no window until something is kept: releasing everything closes it', async () => {
    const limiter = limiterWith(3);
    const appId = newAppId();
    const key = `${redisPrefix}:creation-limit:${appId}`;
    await limiter.reserve(appId, 2);
    expect(await redis.pttl(key)).toBeGreaterThan(0);
    expect(await limiter.release(appId, 2)).toEqual({ limit: 3, remaining: 3, resetSeconds: 3600 });
    expect(await redis.exists(key)).toBe(0);
    expect(await limiter.state(appId)).toEqual({ limit: 3, remaining: 3, resetSeconds: 3600 });
  });

  it('never lets a late release open a window with credit', async () => {
    const limiter = limiterWith(2, 1);
    const appId = newAppId();
    const key = `${redisPrefix}:creation-limit:${appId}`;
    await limiter.reserve(appId, 2);
    await eventually(async () => (await redis.exists(key)) === 0, {
      timeoutMs: 3_000,
      what: 'the window ending',
    });
    await limiter.release(appId, 2);
    expect(await redis.exists(key)).toBe(0);
    expect(await limiter.reserve(appId, 5)).toMatchObject({ granted: 2 });
  });

  it('opens a fresh window when the old one ends', async () => {
    const limiter = limiterWith(2, 1);
    const appId = newAppId();
    expect(await limiter.reserve(appId, 2)).toMatchObject({ granted: 2, resetSeconds: 1 });
    expect(await limiter.reserve(appId, 1)).toMatchObject({ granted: 0 });
    await eventually(async () => (await limiter.state(appId)).remaining === 2, {
      timeoutMs: 3_000,
      what: 'a fresh window',
    });
    expect(await limiter.reserve(appId, 1)).toMatchObject({ granted: 1, remaining: 1 });
  });

  it('never grants more than the limit to concurrent reservations', async () => {
    const limiter = limiterWith(37);
    const appId = newAppId();
    const sizes = Array.from({ length: 60 }, (_, i) => (i % 4) + 1);
    const reservations = await Promise.all(sizes.map((n) => limiter.reserve(appId, n)));
    const granted = reservations.reduce((sum, r) => sum + r.granted, 0);
    expect(granted).toBe(37);
    expect(await redis.get(`${redisPrefix}:creation-limit:${appId}`)).toBe('37');
  });

  it('keeps the total at the limit while reservations and releases interleave', async () => {
    const limiter = limiterWith(10);
    const appId = newAppId();
    // Each caller keeps one unit and gives the rest back, as a request whose other entries failed.
    const results = await Promise.all(
      Array.from({ length: 40 }, async () => {
        const { granted } = await limiter.reserve(appId, 3);
        if (granted > 1) await limiter.release(appId, granted - 1);
        return Math.min(granted, 1);
      }),
    );
    const kept = results.reduce((sum, n) => sum + n, 0);
    expect(kept).toBeLessThanOrEqual(10);
    expect(Number(await redis.get(`${redisPrefix}:creation-limit:${appId}`))).toBe(kept);
  });

  it('makes one turn’s reservations with one call per app, granted in the order asked', async () => {
    const limiter = limiterWith(6);
    const [appId, other] = [newAppId(), newAppId()];
    await limiter.reserve(newAppId(), 1); // the script is loaded: a call is one command
    const sent = jest.spyOn(redis, 'sendCommand');
    try {
      const made = await Promise.all([
        limiter.reserve(appId, 2),
        limiter.reserve(other, 1),
        limiter.reserve(appId, 3),
        limiter.reserve(appId, 4),
        limiter.reserve(appId, 1),
      ]);
      expect(made.map(({ granted }) => granted)).toEqual([2, 1, 3, 1, 0]);
      // Each reports the window as the turn left it.
      expect(made[0]).toMatchObject({ remaining: 0, resetSeconds: 3600 });
      expect(made[3]).toMatchObject({ remaining: 0 });
      expect(made[1]).toMatchObject({ remaining: 5 });
      // One INCRBY per app, and one more giving back what did not fit.
      expect(sent).toHaveBeenCalledTimes(3);
    } finally {
      sent.mockRestore();
    }
    expect(await redis.get(`${redisPrefix}:creation-limit:${appId}`)).toBe('6');
  });

  it('refuses a reservation of no units without failing the others of its turn', async () => {
    const limiter = limiterWith(5);
    const appId = newAppId();
    const [failed, made] = await Promise.allSettled([
      limiter.reserve(appId, 0),
      limiter.reserve(appId, 2),
    ]);
    expect(failed).toMatchObject({ status: 'rejected', reason: expect.any(RangeError) });
    expect(made).toMatchObject({ status: 'fulfilled', value: { granted: 2, remaining: 3 } });
  });

  it('rejects with an error, not a refusal, when Redis is unreachable', async () => {
    const offline = unreachableRedis({ maxRetriesPerRequest: 0 });
    const limiter = new CreationLimiter({ redis: offline, redisPrefix, limitPerHour: 5 });
    await expect(limiter.reserve(newAppId(), 1)).rejects.toThrow(/not ready/);
    offline.disconnect();
  });
});
