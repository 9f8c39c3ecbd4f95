import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { DbHandle } from '@linkservice/db';
import type { ClickKeys } from '@linkservice/link-cache';
import {
  CLICK_TOKEN_TOMBSTONE,
  ClickTokenStore,
  batchName,
  clickKeys,
  clickTokenShardCharacter,
  legacyClickKeys,
  clickTokenKey,
  visitorsKeyPrefix,
  hashClickToken,
  parseClickTokenValue,
} from '@linkservice/link-cache';
import { createLogger } from '@linkservice/logger';
import {
  createTenant,
  eventually,
  insertLink,
  testDatabase,
  testEnvironment,
  unreachableRedis,
} from '@linkservice/testing';
import { clickCount } from '../testing/harness';
import { visitorsField } from '../analytics/click-analytics';
import { NOT_WRITABLE_MESSAGE, pingOnceConnected } from '../redis-calls';
import { RedisBackoff } from '../redis-backoff';
import { ClickBatchesRepository } from './click-batches.repository';
import type { Click } from './click-buffers';
import type { ClickCounterOptions } from './click-counter';
import { ClickCounter } from './click-counter';
import { ClickFlusher } from './click-flusher';

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

interface IsolatedKeys extends ClickKeys {
  /** The REDIS_PREFIX the keys are under. */
  prefix: string;
}

/**
 * Each test counts under its own key namespace, as one deployment would; the click keys are
 * those of one link host shard (a flusher takes every shard's), for a test that plants batches.
 */
function isolatedKeys(shard = 0): IsolatedKeys {
  const prefix = `${env.redisPrefix}:${randomUUID().slice(0, 8)}`;
  return { prefix, ...clickKeys(prefix, shard) };
}

const TOKEN_TTL_MS = 60_000;

function counterFor(
  client: Redis,
  keys: IsolatedKeys,
  limits: Pick<ClickCounterOptions, 'maxUntokened' | 'maxUncertain'> = {},
) {
  return new ClickCounter({
    redis: client,
    redisPrefix: keys.prefix,
    tokenTtlMs: TOKEN_TTL_MS,
    logger,
    backoff: new RedisBackoff(1_000),
    ...limits,
  });
}

/** A click on `linkId` now, with a fresh token (its hash stands for a minted token's). */
function clickOn(linkId: string, at = Date.now()): Click {
  return { linkId, tokenHash: hashClickToken(randomUUID()), at, analytics: null };
}

/**
 * Runs `work` while the shared client refuses to send a click's script call, as ioredis does
 * while Redis is gone for a moment (no offline queue): the click was certainly not sent.
 */
async function whileRedisRefusesClicks(work: () => Promise<void>): Promise<void> {
  const refuse = jest
    .spyOn(redis, 'evalsha')
    .mockImplementation(() => Promise.reject(new Error(NOT_WRITABLE_MESSAGE)));
  try {
    await work();
  } finally {
    refuse.mockRestore();
  }
}

/** Runs `work` with a counter of its own whose Redis never answers (no retries, no offline queue). */
async function withUnreachableCounter(
  keys: IsolatedKeys,
  work: (counter: ClickCounter) => Promise<void>,
): Promise<void> {
  const unreachable = unreachableRedis({ maxRetriesPerRequest: 0, enableOfflineQueue: false });
  try {
    await work(counterFor(unreachable, keys));
  } finally {
    unreachable.disconnect();
  }
}

/** What Redis holds under the click's token, parsed; null when nothing is stored. */
async function storedTokenOf(prefix: string, click: Click) {
  const stored = await redis.get(clickTokenKey(prefix, click.tokenHash));
  return stored === null ? null : parseClickTokenValue(stored);
}

function flusherFor(keys: IsolatedKeys, counter = counterFor(redis, keys)) {
  return {
    counter,
    flusher: new ClickFlusher({
      redis,
      batches: new ClickBatchesRepository(postgres.db),
      redisPrefix: keys.prefix,
      counter,
      logger,
      intervalMs: 60_000,
      recoverAfterMs: 30_000,
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
      counter.recordClick(clickOn(a.id), 'fresh'),
      counter.recordClick(clickOn(a.id), 'fresh'),
      counter.recordClick(clickOn(b.id), 'fresh'),
    ]);

    await flusher.flush();

    expect(await clickCount(postgres.db, a.id)).toBe(2);
    expect(await clickCount(postgres.db, b.id)).toBe(1);
    expect(await redis.exists(keys.pending)).toBe(0);
    expect(await redis.smembers(keys.batches)).toEqual([]);
  });

  it("takes every shard's pending clicks in one pass, and a 0.1 redirect's on a single Redis (compat)", async () => {
    const keys = isolatedKeys();
    const { flusher } = flusherFor(keys);
    const [a, b] = await twoLinks();
    // Clicks a 0.1 redirect of a rolling upgrade counted, a batch it took and died with, and
    // clicks counted in two shards.
    const legacy = legacyClickKeys(keys.prefix);
    await redis.hset(legacy.pending, a.id, '2');
    const legacyBatch = batchName(legacy, Date.now() - 60_000, randomUUID());
    await redis.hset(legacyBatch.key, b.id, '5');
    await redis.sadd(legacy.batches, legacyBatch.key);
    await redis.hset(clickKeys(keys.prefix, 3).pending, a.id, '1');
    await redis.hset(clickKeys(keys.prefix, 11).pending, a.id, '4', b.id, '1');

    await flusher.flush();

    expect(await clickCount(postgres.db, a.id)).toBe(7);
    expect(await clickCount(postgres.db, b.id)).toBe(6);
    for (const shard of [legacy, clickKeys(keys.prefix, 3), clickKeys(keys.prefix, 11)]) {
      expect(await redis.exists(shard.pending, shard.batches)).toBe(0);
    }
    expect(await redis.exists(legacyBatch.key)).toBe(0);
  });

  it('applies a batch once even when it is applied again (crash between commit and delete)', async () => {
    const keys = isolatedKeys();
    const { counter, flusher } = flusherFor(keys);
    const [a] = await twoLinks();
    await counter.recordClick(clickOn(a.id), 'fresh');
    await flusher.flush();
    expect(await clickCount(postgres.db, a.id)).toBe(1);

    // Replay: the same batch id reappears in Redis, as if the delete after the commit was lost.
    const batch = batchName(keys, Date.now() - 60_000, 'replayed');
    await redis.hset(batch.key, a.id, '1');
    await redis.sadd(keys.batches, batch.key);
    await flusher.flush(0);
    await redis.hset(batch.key, a.id, '1');
    await redis.sadd(keys.batches, batch.key);
    await flusher.flush(0);

    expect(await clickCount(postgres.db, a.id)).toBe(2);
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
        Array.from({ length: 20 + i }, (_, n) =>
          counter.recordClick(clickOn(n % 2 ? a.id : b.id), 'fresh'),
        ),
      );
      expected += clicks.length;
      // Every replica flushes and recovers everything it sees, all at the same time.
      await Promise.all([...clicks, ...replicas.map(({ flusher }) => flusher.flush(0))]);
    }
    await Promise.all(replicas.map(({ flusher }) => flusher.flush(0)));
    const total = (await clickCount(postgres.db, a.id)) + (await clickCount(postgres.db, b.id));
    expect(total).toBe(expected);
  });

  it('writes clicks Redis could not take straight to Postgres', async () => {
    const keys = isolatedKeys();
    const [a] = await twoLinks();
    await withUnreachableCounter(keys, async (counter) => {
      await counter.recordClick(clickOn(a.id), 'fresh');
      await counter.recordClick(clickOn(a.id), 'fresh');

      const { flusher } = flusherFor(keys, counter);
      await flusher.flush();
      expect(await clickCount(postgres.db, a.id)).toBe(2);
    });
  });

  it('stores the click tokens Redis refused with their clicks once it answers, with the time they have left', async () => {
    const keys = isolatedKeys();
    const { prefix } = keys;
    const [a] = await twoLinks();
    const counter = counterFor(redis, keys);
    const now = Date.now();
    const fresh = clickOn(a.id, now - 20_000);
    const expired = clickOn(a.id, now - TOKEN_TTL_MS - 1);
    // Redis refuses the clicks' round trips, then answers again.
    await whileRedisRefusesClicks(async () => {
      await counter.recordClick(fresh, 'fresh');
      await counter.recordClick(expired, 'fresh');
    });
    expect(counter.untokenedCount).toBe(2);
    expect(await redis.exists(clickTokenKey(prefix, fresh.tokenHash))).toBe(0);

    const { flusher } = flusherFor(keys, counter);
    await flusher.flush();
    expect(await clickCount(postgres.db, a.id)).toBe(2);
    expect(counter.untokenedCount).toBe(0);
    expect(await storedTokenOf(prefix, fresh)).toEqual({
      linkId: a.id,
      clickedAt: fresh.at,
    });
    const ttl = await redis.pttl(clickTokenKey(prefix, fresh.tokenHash));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(TOKEN_TTL_MS - 20_000);
    // The expired one was dropped, not stored with a TTL of its own.
    expect(await redis.exists(clickTokenKey(prefix, expired.tokenHash))).toBe(0);
  });

  it('adds the visitors of clicks Redis refused once it answers, beside their tokens', async () => {
    const keys = isolatedKeys();
    const { prefix } = keys;
    const [a] = await twoLinks();
    const counter = counterFor(redis, keys);
    const now = Date.now();
    const day = Math.floor(now / 86_400_000);
    // Minted in one shard, as a link's tokens are (its alias' shard).
    const shard = 3;
    const visited = (visitor: string): Click => {
      const click = clickOn(a.id, now);
      const tokenHash = clickTokenShardCharacter(shard) + click.tokenHash.slice(1);
      return { ...click, tokenHash, analytics: { dimensions: '', visitor, day } };
    };
    // Two visitors, one of them twice, and a bot's click (no visitor) among them.
    const clicks = [visited('v1'), visited(''), visited('v2'), visited('v1')];
    await whileRedisRefusesClicks(async () => {
      for (const click of clicks) await counter.recordClick(click, 'fresh');
    });
    expect(counter.untokenedCount).toBe(4);

    expect(await counter.storeUntokened(now)).toBe(0);
    for (const click of clicks) expect(await storedTokenOf(prefix, click)).not.toBeNull();
    const visitors = visitorsKeyPrefix(prefix, shard, day) + a.id;
    expect(await redis.pfcount(visitors)).toBe(2);
    expect(await redis.pttl(visitors)).toBeGreaterThan(0);
    // The day's new-visitor mark: the next pass reads the count.
    expect(await redis.hget(clickKeys(prefix, shard).pending, visitorsField(a.id, day))).toBe('1');
  });

  it('keeps the tokens Redis still refuses for the next pass', async () => {
    const keys = isolatedKeys();
    const [a] = await twoLinks();
    await withUnreachableCounter(keys, async (counter) => {
      await counter.recordClick(clickOn(a.id), 'fresh');
      expect(await counter.storeUntokened()).toBe(1);
      expect(await counter.storeUntokened()).toBe(1);
    });
  });

  it('keeps at most maxUntokened tokens waiting, dropping the oldest, and still counts every click', async () => {
    const keys = isolatedKeys();
    const { prefix } = keys;
    const [a] = await twoLinks();
    const counter = counterFor(redis, keys, { maxUntokened: 10 });
    const clicks = Array.from({ length: 12 }, (_, n) => clickOn(a.id, Date.now() - 12 + n));
    await whileRedisRefusesClicks(async () => {
      for (const click of clicks) await counter.recordClick(click, 'fresh');
    });
    // Past 10, the oldest tenth-and-more went: 11 -> 9 kept, then the 12th: 10.
    expect(counter.untokenedCount).toBe(10);
    const { flusher } = flusherFor(keys, counter);
    await flusher.flush();
    expect(await clickCount(postgres.db, a.id)).toBe(12);
    const stored = await Promise.all(
      clicks.map((click) => redis.exists(clickTokenKey(prefix, click.tokenHash))),
    );
    expect(stored).toEqual([0, 0, ...Array<number>(10).fill(1)]);
  });

  it('reconciles uncertain clicks once each: counted if their first call never ran, not again if it did', async () => {
    const keys = isolatedKeys();
    const { prefix } = keys;
    const [a] = await twoLinks();
    const counter = counterFor(redis, keys);
    const ran = clickOn(a.id);
    const neverRan = clickOn(a.id);
    // `ran`'s call reached Redis though its caller saw a timeout; `neverRan`'s did not.
    await counter.recordClick(ran, 'fresh');
    await counter.recordClick(ran, 'uncertain');
    await counter.recordClick(neverRan, 'uncertain');
    await counter.recordClick(neverRan, 'uncertain');

    const { flusher } = flusherFor(keys, counter);
    await flusher.flush();
    expect(counter.uncertainCount).toBe(0);
    expect(await clickCount(postgres.db, a.id)).toBe(2);
    expect(counter.clicksDropped).toBe(0);
    expect(await storedTokenOf(prefix, neverRan)).toEqual({
      linkId: a.id,
      clickedAt: neverRan.at,
    });
  });

  it('counts nothing for an uncertain click whose token was used up meanwhile (a tombstone)', async () => {
    const keys = isolatedKeys();
    const { prefix } = keys;
    const [a] = await twoLinks();
    const counter = counterFor(redis, keys);
    const click = clickOn(a.id);
    await counter.recordClick(click, 'fresh');
    // An install used the token up (the gateway's ClickTokenStore), then the click is reconciled.
    await new ClickTokenStore(redis, prefix).forget([click.tokenHash]);
    await counter.recordClick(click, 'uncertain');

    const { flusher } = flusherFor(keys, counter);
    await flusher.flush();
    expect(await clickCount(postgres.db, a.id)).toBe(1);
    expect(await redis.get(clickTokenKey(prefix, click.tokenHash))).toBe(CLICK_TOKEN_TOMBSTONE);
  });

  it('drops uncertain clicks past their token time or beyond the cap, counting them in clicksDropped, never writing them to Postgres', async () => {
    const keys = isolatedKeys();
    const [a] = await twoLinks();
    const counter = counterFor(redis, keys, { maxUncertain: 10 });
    for (let n = 0; n < 11; n++) await counter.recordClick(clickOn(a.id), 'uncertain');
    // 11 > 10: the oldest two went (down to 9).
    expect(counter.uncertainCount).toBe(9);
    expect(counter.clicksDropped).toBe(2);
    // Within the last tenth of its time: too late to reconcile safely.
    await counter.recordClick(clickOn(a.id, Date.now() - TOKEN_TTL_MS + 1_000), 'uncertain');

    await withUnreachableCounter(keys, async (away) => {
      await away.recordClick(clickOn(a.id), 'uncertain');
      const { flusher } = flusherFor(keys, away);
      await flusher.stop();
      expect(away.clicksDropped).toBe(1);
    });
    const { flusher } = flusherFor(keys, counter);
    await flusher.flush();
    expect(counter.clicksDropped).toBe(3);
    expect(await clickCount(postgres.db, a.id)).toBe(9);
  });

  it('stop() runs a last flush', async () => {
    const keys = isolatedKeys();
    const [a] = await twoLinks();
    const { counter, flusher } = flusherFor(keys);
    flusher.start();
    await counter.recordClick(clickOn(a.id), 'fresh');
    await flusher.stop();
    expect(await clickCount(postgres.db, a.id)).toBe(1);
  });

  it('stop() right after the connection dropped (a Redis restart) waits for the reconnect and still flushes', async () => {
    const keys = isolatedKeys();
    const [a] = await twoLinks();
    // As the link host's client: commands fail at once while it is not connected.
    const client = new Redis(env.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    try {
      await pingOnceConnected(client);
      const counter = counterFor(client, keys);
      const flusher = new ClickFlusher({
        redis: client,
        batches: new ClickBatchesRepository(postgres.db),
        redisPrefix: keys.prefix,
        counter,
        logger,
        intervalMs: 60_000,
        recoverAfterMs: 30_000,
      });
      await counter.recordClick(clickOn(a.id), 'fresh');
      client.disconnect(true);
      await flusher.stop();
      expect(await clickCount(postgres.db, a.id)).toBe(1);
      expect(await redis.exists(keys.pending)).toBe(0);
    } finally {
      client.disconnect();
    }
  });
});
