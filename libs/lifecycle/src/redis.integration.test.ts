import { createLogger } from '@linkservice/logger';
import { eventually, freePort, testEnvironment } from '@linkservice/testing';
import type { RedisClient } from './redis';
import { closeRedis, createRedisClient } from './redis';

function capturingLogger() {
  const lines: { level: string; msg: string; redis?: string }[] = [];
  const logger = createLogger('lifecycle-test', 'info', {
    write: (line: string) => {
      lines.push(JSON.parse(line) as (typeof lines)[number]);
    },
  });
  return { logger, lines };
}

const until = (check: () => boolean, timeoutMs: number, what: string) =>
  eventually(check, { timeoutMs, intervalMs: 10, what });

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('a client of an unreachable Redis', () => {
  const clients: RedisClient[] = [];
  async function unreachable(retryDelayMs: number) {
    const capture = capturingLogger();
    const redis = createRedisClient(
      { REDIS_URL: `redis://127.0.0.1:${await freePort()}` },
      {
        connectionName: 'unreachable',
        logger: capture.logger,
        retryStrategy: () => retryDelayMs,
      },
    );
    clients.push(redis);
    return { redis, lines: capture.lines };
  }
  afterEach(() => {
    for (const redis of clients.splice(0)) redis.disconnect();
  });

  it('logs the connection error once, not on every reconnect attempt', async () => {
    const { redis, lines } = await unreachable(20);
    let attempts = 0;
    redis.on('reconnecting', () => attempts++);
    await until(() => attempts >= 3, 5_000, 'three reconnect attempts');
    expect(lines.filter((line) => line.msg === 'redis connection error')).toEqual([
      expect.objectContaining({ level: 'warn', redis: 'unreachable' }),
    ]);
  });

  it('closes without a timer left to hold the process open', async () => {
    // A long retry delay: between attempts, exactly one timer (the reconnect) is ioredis'.
    const { redis } = await unreachable(60_000);
    await until(() => redis.status === 'reconnecting', 5_000, 'a failed connect');
    const withReconnectTimer = timers();
    await closeRedis(redis);
    // Closing clears the reconnect timer; ioredis' default disconnectTimeout would then keep a
    // 2 s timer for the socket that already died, REDIS_CONNECTION_DEFAULTS a 200 ms one.
    await until(() => timers() < withReconnectTimer, 1_000, 'every timer of the client ending');
  });
});

describe('a client of a running Redis', () => {
  it('speaks RESP2, as the code and BullMQ were written against (ioredis 6 would ask for RESP3)', async () => {
    const redis = createRedisClient(
      { REDIS_URL: testEnvironment().redisUrl },
      {
        connectionName: 'resp2-check',
        logger: createLogger('test', 'silent'),
      },
    );
    try {
      expect(String(await redis.call('CLIENT', 'INFO'))).toMatch(/ resp=2\s*$/);
    } finally {
      await closeRedis(redis);
    }
  });

  it('connects with the name it was given and closes with QUIT', async () => {
    const { logger } = capturingLogger();
    const redis = createRedisClient(
      { REDIS_URL: testEnvironment().redisUrl },
      {
        connectionName: 'lifecycle-test',
        logger,
      },
    );
    expect(await redis.client('GETNAME')).toBe('lifecycle-test');
    await closeRedis(redis);
    await until(() => redis.status === 'end', 1_000, 'the connection ending');
    await expect(closeRedis(redis)).resolves.toBeUndefined();
  });
});
