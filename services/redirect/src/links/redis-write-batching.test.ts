import { Redis } from 'ioredis';
import { testEnvironment } from '@linkservice/testing';
import { redisWriteBatcher } from './redis-write-batching';

const env = testEnvironment();

describe('redisWriteBatcher', () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(env.redisUrl, { enableOfflineQueue: false, lazyConnect: true });
    await redis.connect();
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('holds the writes of one turn and releases them after it; every command is answered', async () => {
    const batchWrites = redisWriteBatcher(redis);
    const key = `${env.redisPrefix}:batching:${Date.now()}`;
    batchWrites();
    batchWrites();
    const replies = [redis.incr(key), redis.incr(key), redis.incr(key)];
    expect(redis.stream.writableCorked).toBe(1);
    expect(redis.stream.writableLength).toBeGreaterThan(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(redis.stream.writableCorked).toBe(0);
    expect(await Promise.all(replies)).toEqual([1, 2, 3]);

    // A later turn corks again, and is released again.
    batchWrites();
    const later = redis.incr(key);
    expect(redis.stream.writableCorked).toBe(1);
    expect(await later).toBe(4);
    expect(redis.stream.writableCorked).toBe(0);
    await redis.del(key);
  });

  it('corks nothing while the client is not ready (no socket yet)', () => {
    const idle = new Redis(env.redisUrl, { enableOfflineQueue: false, lazyConnect: true });
    expect(idle.status).toBe('wait');
    expect(() => {
      redisWriteBatcher(idle)();
    }).not.toThrow();
    idle.disconnect();
  });
});
