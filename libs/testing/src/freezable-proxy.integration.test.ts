import { Redis } from 'ioredis';
import { testEnvironment } from './environment';
import { FreezableProxy } from './freezable-proxy';

describe('FreezableProxy', () => {
  let proxy: FreezableProxy;
  let redis: Redis;

  beforeAll(async () => {
    const target = new URL(testEnvironment().redisUrl);
    proxy = await FreezableProxy.start({ host: target.hostname, port: Number(target.port) });
    redis = new Redis(proxy.rewrite(testEnvironment().redisUrl), {
      retryStrategy: () => 50,
      maxRetriesPerRequest: null,
    });
    redis.on('error', () => undefined);
  });

  afterAll(async () => {
    redis.disconnect();
    await proxy.close();
  });

  it('forwards until frozen, holds every reply while frozen and delivers them on thaw', async () => {
    await expect(redis.ping()).resolves.toBe('PONG');
    proxy.freeze();
    let answered = false;
    const pending = redis.echo('held').then((reply) => {
      answered = true;
      return reply;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(answered).toBe(false);
    proxy.thaw();
    await expect(pending).resolves.toBe('held');
  });

  it('cut resets the connections; the client reconnects through it', async () => {
    await expect(redis.ping()).resolves.toBe('PONG');
    const closed = new Promise((resolve) => redis.once('close', resolve));
    proxy.cut();
    await closed;
    await expect(redis.ping()).resolves.toBe('PONG');
  });
});
