import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { DbHandle } from '@linkservice/db';
import { ReadYourWrites, ReplicaReads, WriteFences } from '@linkservice/db';
import { testDatabase, testEnvironment, unreachableRedis } from '@linkservice/testing';

/**
 * The write fences the gateway, the link host and linkctl share (libs/db write-fences.ts), on the
 * run's Redis and Postgres: one key per app and environment, only ever raised, and what a
 * writer records is the primary's WAL position after its commit.
 */
const env = testEnvironment();
const redis = new Redis(env.redisUrl);
let postgres: DbHandle;
beforeAll(() => {
  postgres = testDatabase(2);
});
afterAll(async () => {
  await redis.quit();
  await postgres.close();
});

const fences = () => new WriteFences(redis, env.redisPrefix, 60);
const freshScope = () => ({ appId: `app_${randomUUID()}`, environment: 'live' as const });

describe('WriteFences', () => {
  it('keeps one key per app and environment, under the prefix, with the TTL', async () => {
    const scope = freshScope();
    await fences().raise(scope, 0x1_0000_0010n);
    const key = `${env.redisPrefix}:write-fence:live:${scope.appId}`;
    expect(await redis.get(key)).toBe('0000000100000010');
    expect(await redis.ttl(key)).toBeGreaterThan(50);
    expect(await fences().get(scope)).toEqual({ lsn: 0x1_0000_0010n });
    expect(await fences().get({ ...scope, environment: 'test' })).toEqual({});
  });

  it('is only raised: a writer that lost the race does not move it back', async () => {
    const scope = freshScope();
    await fences().raise(scope, 500n);
    await fences().raise(scope, 300n);
    expect(await fences().get(scope)).toEqual({ lsn: 500n });
    await fences().raise(scope, 0x2_0000_0000n);
    expect(await fences().get(scope)).toEqual({ lsn: 0x2_0000_0000n });
  });
});

describe('ReadYourWrites', () => {
  it("records the primary's WAL position after a write, which later reads must pass", async () => {
    // The run's database stands in for both servers: "enabled" only needs a replica pool.
    const reads = new ReplicaReads({ primary: postgres.db, replica: postgres.db });
    const readYourWrites = new ReadYourWrites(reads, fences());
    const scope = freshScope();
    const before = await reads.primaryPosition();
    await readYourWrites.written(scope);
    const fence = await readYourWrites.fenceFor(scope);
    expect(fence).toEqual({ lsn: expect.any(BigInt) as bigint });
    expect((fence as { lsn: bigint }).lsn).toBeGreaterThanOrEqual(before);
  });

  it('records nothing and fences nothing without a replica', async () => {
    const reads = new ReplicaReads({ primary: postgres.db, replica: undefined });
    const readYourWrites = new ReadYourWrites(reads, fences());
    const scope = freshScope();
    await readYourWrites.written(scope);
    expect(await fences().get(scope)).toEqual({});
  });

  it("answers 'unknown' when Redis cannot be asked, so the read goes to the primary", async () => {
    const away = unreachableRedis({ enableOfflineQueue: false });
    try {
      const reads = new ReplicaReads({ primary: postgres.db, replica: postgres.db });
      const readYourWrites = new ReadYourWrites(reads, new WriteFences(away, env.redisPrefix, 60));
      expect(await readYourWrites.fenceFor(freshScope())).toBe('unknown');
      await expect(readYourWrites.written(freshScope())).rejects.toThrow();
    } finally {
      away.disconnect();
    }
  });
});
