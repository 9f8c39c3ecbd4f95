import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { DbHandle } from '@linkservice/db';
import { createLogger } from '@linkservice/logger';
import {
  createTenant,
  eventually,
  insertLink,
  testDatabase,
  testEnvironment,
} from '@linkservice/testing';
import { clickCount, clickTokensOf } from '../testing/harness';
import { applyClickBatch } from './click-batches.repository';
import type { CountedClick } from './click-counter';
import { ClickCounter } from './click-counter';
import { ClickTokenMinter } from './click-token';
import { ClickFlusher } from './click-flusher';
import type { ClickKeys } from './click-keys';
import { batchName, clickKeys } from './click-keys';
import { clickTokenField, clickTokenValue } from '@linkservice/link-cache';

const env = testEnvironment();
const logger = createLogger('click-flusher-test', 'silent');
let postgres: DbHandle;
let redis: Redis;

beforeAll(() => {
  postgres = testDatabase(4);
  redis = new Redis(env.redisUrl);
});
afterAll(async () => {
  await redis.quit();
  await postgres.close();
});

const TOKEN_TTL_SECONDS = 600;
const minter = new ClickTokenMinter();

/** A click on `linkId` now, with a token of its own. */
function clickOn(linkId: string, at = Date.now()): CountedClick & { token: string } {
  const { token, hash } = minter.mint();
  return { linkId, tokenHash: hash, at, token };
}

/** Each test counts under its own key namespace, as one deployment would. */
function isolatedKeys(): ClickKeys {
  return clickKeys(`${env.redisPrefix}:${randomUUID().slice(0, 8)}`);
}

function flusherFor(keys: ClickKeys, counter = new ClickCounter(redis, keys, logger)) {
  return {
    counter,
    flusher: new ClickFlusher({
      redis,
      db: postgres.db,
      keys,
      counter,
      logger,
      intervalMs: 60_000,
      recoverAfterMs: 30_000,
      clickTokenTtlSeconds: TOKEN_TTL_SECONDS,
    }),
  };
}

async function twoLinks() {
  const app = await createTenant(postgres.db);
  return [await insertLink(postgres.db, app), await insertLink(postgres.db, app)] as const;
}

describe('ClickFlusher', () => {
  it('moves pending clicks into click_count and leaves nothing behind in Redis', async () => {
    const keys = isolatedKeys();
    const { counter, flusher } = flusherFor(keys);
    const [a, b] = await twoLinks();
    await Promise.all([
      counter.record(clickOn(a.id)),
      counter.record(clickOn(a.id)),
      counter.record(clickOn(b.id)),
    ]);

    await flusher.flush();

    expect(await clickCount(postgres.db, a.id)).toBe(2);
    expect(await clickCount(postgres.db, b.id)).toBe(1);
    expect(await clickTokensOf(postgres.db, a.id)).toHaveLength(2);
    expect(await clickTokensOf(postgres.db, b.id)).toHaveLength(1);
    expect(await redis.exists(keys.pending)).toBe(0);
    expect(await redis.smembers(keys.batches)).toEqual([]);
  });

  it("stores each click's token: its hash, link, app, environment, click time and expiry", async () => {
    const keys = isolatedKeys();
    const { counter, flusher } = flusherFor(keys);
    const app = await createTenant(postgres.db);
    const live = await insertLink(postgres.db, app);
    const test = await insertLink(postgres.db, { appId: app.appId, environment: 'test' });
    const at = Date.UTC(2030, 5, 1, 12, 0, 0, 123);
    const onLive = clickOn(live.id, at);
    const onTest = clickOn(test.id, at + 1);
    await counter.record(onLive);
    await counter.record(onTest);
    // What the redirect wrote: the count and the token's field, side by side.
    expect(await redis.hgetall(keys.pending)).toEqual({
      [live.id]: '1',
      [test.id]: '1',
      [clickTokenField(onLive.tokenHash)]: `${live.id} ${at}`,
      [clickTokenField(onTest.tokenHash)]: `${test.id} ${at + 1}`,
    });

    await flusher.flush();

    expect(await clickTokensOf(postgres.db, live.id)).toEqual([
      {
        tokenHash: createHash('sha256').update(onLive.token).digest('hex'),
        linkId: live.id,
        appId: app.appId,
        environment: 'live',
        clickedAt: at,
        expiresAt: at + TOKEN_TTL_SECONDS * 1000,
      },
    ]);
    expect(await clickTokensOf(postgres.db, test.id)).toEqual([
      expect.objectContaining({ appId: app.appId, environment: 'test', clickedAt: at + 1 }),
    ]);
  });

  it('inserts the tokens of a batch applied twice exactly once, and keeps a token two batches carry', async () => {
    const [a] = await twoLinks();
    const first = clickOn(a.id, Date.UTC(2030, 0, 1));
    const second = clickOn(a.id, Date.UTC(2030, 0, 2));
    const batch = {
      counts: new Map([[a.id, 2]]),
      tokens: [first, second].map(({ tokenHash, linkId, at }) => ({
        tokenHash,
        linkId,
        clickedAt: at,
      })),
    };
    const batchId = `test:${randomUUID()}`;
    expect(await applyClickBatch(postgres.db, batchId, batch, 60)).toBe(true);
    expect(await applyClickBatch(postgres.db, batchId, batch, 60)).toBe(false);
    expect(await clickCount(postgres.db, a.id)).toBe(2);
    expect((await clickTokensOf(postgres.db, a.id)).map((t) => t.tokenHash)).toEqual([
      first.tokenHash,
      second.tokenHash,
    ]);

    // The same click in a second batch (a lookup that timed out after Redis ran it is counted
    // again): its token stays as first stored.
    const again = { counts: new Map([[a.id, 1]]), tokens: [{ ...batch.tokens[0], clickedAt: 1 }] };
    expect(await applyClickBatch(postgres.db, `test:${randomUUID()}`, again, 60)).toBe(true);
    const stored = await clickTokensOf(postgres.db, a.id);
    expect(stored).toHaveLength(2);
    expect(stored[0]).toMatchObject({ tokenHash: first.tokenHash, clickedAt: first.at });
  });

  it('applies a batch once even when it is applied again (crash between commit and delete)', async () => {
    const keys = isolatedKeys();
    const { counter, flusher } = flusherFor(keys);
    const [a] = await twoLinks();
    await counter.record(clickOn(a.id));
    await flusher.flush();
    expect(await clickCount(postgres.db, a.id)).toBe(1);

    // Replay: the same batch id reappears in Redis, as if the delete after the commit was lost.
    const batch = batchName(keys, Date.now() - 60_000, 'replayed');
    const replayed = clickOn(a.id);
    const tokenField = [clickTokenField(replayed.tokenHash), clickTokenValue(a.id, replayed.at)];
    await redis.hset(batch.key, a.id, '1', ...tokenField);
    await redis.sadd(keys.batches, batch.key);
    await flusher.flush(0);
    await redis.hset(batch.key, a.id, '1', ...tokenField);
    await redis.sadd(keys.batches, batch.key);
    await flusher.flush(0);

    expect(await clickCount(postgres.db, a.id)).toBe(2);
    expect(await clickTokensOf(postgres.db, a.id)).toHaveLength(2);
    expect(await redis.exists(batch.key)).toBe(0);
  });

  it('recovers batches a crashed flusher left behind, on start', async () => {
    const keys = isolatedKeys();
    const [a, b] = await twoLinks();
    // A flusher renamed pending into a batch and died before applying it.
    const orphan = batchName(keys, Date.now(), randomUUID());
    await redis.hset(orphan.key, a.id, '7', b.id, '3');
    await redis.sadd(keys.batches, orphan.key);

    const { flusher } = flusherFor(keys);
    flusher.start();
    try {
      await eventually(async () => (await redis.scard(keys.batches)) === 0, {
        timeoutMs: 5_000,
        what: 'no batch left in Redis',
      });
    } finally {
      await flusher.stop();
    }
    expect(await clickCount(postgres.db, a.id)).toBe(7);
    expect(await clickCount(postgres.db, b.id)).toBe(3);
  });

  it("leaves another live flusher's fresh batch alone, but takes it over once stale", async () => {
    const keys = isolatedKeys();
    const [a] = await twoLinks();
    const fresh = batchName(keys, Date.now(), randomUUID());
    await redis.hset(fresh.key, a.id, '4');
    await redis.sadd(keys.batches, fresh.key);

    const { flusher } = flusherFor(keys);
    await flusher.flush();
    expect(await clickCount(postgres.db, a.id)).toBe(0);
    await flusher.flush(0);
    expect(await clickCount(postgres.db, a.id)).toBe(4);
  });

  it('never double-counts with several replicas flushing the same clicks at once', async () => {
    const keys = isolatedKeys();
    const [a, b] = await twoLinks();
    const replicas = [flusherFor(keys), flusherFor(keys), flusherFor(keys)];
    let expected = 0;
    for (let round = 0; round < 5; round++) {
      const clicks = replicas.flatMap(({ counter }, i) =>
        Array.from({ length: 20 + i }, (_, n) => counter.record(clickOn(n % 2 ? a.id : b.id))),
      );
      expected += clicks.length;
      // Every replica flushes and recovers everything it sees, all at the same time.
      await Promise.all([...clicks, ...replicas.map(({ flusher }) => flusher.flush(0))]);
    }
    await Promise.all(replicas.map(({ flusher }) => flusher.flush(0)));
    const total = (await clickCount(postgres.db, a.id)) + (await clickCount(postgres.db, b.id));
    expect(total).toBe(expected);
    const tokens =
      (await clickTokensOf(postgres.db, a.id)).length +
      (await clickTokensOf(postgres.db, b.id)).length;
    expect(tokens).toBe(expected);
  });

  it('writes clicks Redis could not take straight to Postgres', async () => {
    const keys = isolatedKeys();
    const [a] = await twoLinks();
    const unreachable = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      disconnectTimeout: 50,
    });
    unreachable.on('error', () => undefined);
    try {
      const counter = new ClickCounter(unreachable, keys, logger);
      const clicks = [clickOn(a.id), clickOn(a.id)];
      for (const click of clicks) await counter.record(click);

      const { flusher } = flusherFor(keys, counter);
      await flusher.flush();
      expect(await clickCount(postgres.db, a.id)).toBe(2);
      expect((await clickTokensOf(postgres.db, a.id)).map((t) => t.tokenHash).sort()).toEqual(
        clicks.map((click) => click.tokenHash).sort(),
      );
    } finally {
      unreachable.disconnect();
    }
  });

  it('stop() runs a last flush', async () => {
    const keys = isolatedKeys();
    const [a] = await twoLinks();
    const { counter, flusher } = flusherFor(keys);
    flusher.start();
    await counter.record(clickOn(a.id));
    await flusher.stop();
    expect(await clickCount(postgres.db, a.id)).toBe(1);
  });
});
