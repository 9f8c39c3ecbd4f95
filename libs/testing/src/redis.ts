import type { RedisOptions } from 'ioredis';
import { Redis } from 'ioredis';

/**
 * A Redis client of a port nothing listens on (1): it never connects, so Redis is "away" for
 * whatever is given it. It connects only when first used, never retries, swallows its error
 * events, and closes without leaving ioredis' 2 s disconnect timer behind (which would keep a
 * jest worker alive). `options` add to that (e.g. `enableOfflineQueue: false` to fail commands
 * at once instead of when the connection attempt fails).
 */
export function unreachableRedis(options: RedisOptions = {}): Redis {
  const redis = new Redis('redis://127.0.0.1:1', {
    lazyConnect: true,
    retryStrategy: () => null,
    disconnectTimeout: 50,
    ...options,
  });
  redis.on('error', () => undefined);
  return redis;
}

/** Deletes every key whose name starts with `prefix`, a SCAN page at a time (never KEYS). */
export async function deleteKeysWithPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length) await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
}
