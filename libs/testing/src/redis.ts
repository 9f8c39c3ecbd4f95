import type { RedisOptions } from 'ioredis';
import { Cluster, Redis } from 'ioredis';

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

/**
 * Every key matching the SCAN pattern, on a single Redis or on every master of a cluster, a SCAN
 * page at a time (never KEYS), each page handed to `page` on the node that holds it.
 */
export async function scanKeys(
  redis: Redis | Cluster,
  pattern: string,
  page: (node: Redis, keys: string[]) => Promise<unknown> = async () => undefined,
): Promise<string[]> {
  const found: string[] = [];
  for (const node of redis instanceof Cluster ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      if (keys.length) await page(node, keys);
      found.push(...keys);
      cursor = next;
    } while (cursor !== '0');
  }
  return found;
}

/** Deletes every key whose name starts with `prefix` (see scanKeys). */
export async function deleteKeysWithPrefix(redis: Redis | Cluster, prefix: string): Promise<void> {
  // One UNLINK per key: a page's keys are on one node but not in one slot.
  await scanKeys(redis, `${prefix}*`, (node, keys) =>
    Promise.all(keys.map((key) => node.unlink(key))),
  );
}
