import type { RedisOptions } from 'ioredis';

/**
 * Where a `redis://` or `rediss://` URL points, as ioredis options. Only these fields: they are
 * also valid BullMQ connection options, whose types (v6) no longer accept every ioredis option.
 */
export type RedisAddressOptions = Pick<
  RedisOptions,
  'host' | 'port' | 'username' | 'password' | 'db' | 'tls'
>;

/**
 * The address options of a `redis://` or `rediss://` URL. BullMQ builds its own connections
 * from options (blocking ones need settings it forces), so every connection starts from these.
 */
export function redisOptionsFromUrl(url: string): RedisAddressOptions {
  const parsed = new URL(url);
  const db = parsed.pathname.replace(/^\//, '');
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port ? Number(parsed.port) : 6379,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(db ? { db: Number(db) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}
