import type { Logger } from '@linkservice/logger';
import type { Redis } from 'ioredis';

/** ioredis repeats the same error on every reconnect attempt; log a change, not each retry. */
export function logRedisErrors(redis: Redis, logger: Logger, name: string): void {
  let lastMessage: string | undefined;
  redis.on('error', (error: Error) => {
    if (error.message === lastMessage) return;
    lastMessage = error.message;
    logger.warn({ err: error, redis: name }, 'redis connection error');
  });
  redis.on('ready', () => {
    if (lastMessage !== undefined) logger.info({ redis: name }, 'redis connection restored');
    lastMessage = undefined;
  });
}

/** QUIT when connected (lets pending replies arrive), otherwise just drop the socket. */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  await redis.quit().catch(() => {
    redis.disconnect();
  });
}
