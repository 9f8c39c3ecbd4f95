import { once } from 'node:events';
import type { LinkRow } from '@linkservice/db';
import { FreezableProxy, eventually, insertLink, testEnvironment } from '@linkservice/testing';
import type { Answer, Harness, TestApp } from './testing/harness';
import { clickCount, createTestApp, startRedirect, storedClickToken } from './testing/harness';

/**
 * The redirect service with its Redis frozen (a TCP proxy that holds every byte, as a SIGSTOPped
 * Redis or a network blackhole looks to a client): redirects fall back to Postgres within the
 * bounds, and every redirect's click is counted exactly once once Redis is back, including
 * clicks whose lookup timed out and then ran late. Real Redis and Postgres behind the proxy.
 */

/** The bounds: a fallback within 500 ms, an answer within 2 s. Asserted with margin. */
const ANSWER_BOUND_MS = 900;
const PLAY = 'https://play.google.com/store/apps/details?id=com.example.app';

const env = testEnvironment();
let proxy: FreezableProxy;

beforeEach(async () => {
  const target = new URL(env.redisUrl);
  proxy = await FreezableProxy.start({ host: target.hostname, port: Number(target.port) });
});
afterEach(async () => {
  proxy.thaw();
  await proxy.close();
});

/** The service on Redis through the proxy; the flusher runs only when a test flushes. */
async function startBehindProxy(extraEnv: Record<string, string> = {}): Promise<Harness> {
  const h = await startRedirect({
    REDIS_URL: proxy.rewrite(env.redisUrl),
    // Keys of its own: a flusher frozen mid-take would otherwise take the pending clicks of
    // other test files' links (same run, same Redis) and lose them when the test stops it.
    REDIS_PREFIX: `${env.redisPrefix}-frozen`,
    CLICK_FLUSH_INTERVAL_MS: '600000',
    ...extraEnv,
  });
  await ready(h);
  return h;
}

async function ready(h: Harness): Promise<void> {
  const { redis } = h.resources.deps;
  if (redis.status !== 'ready') await once(redis, 'ready');
}

/** A cached link whose answer carries its click token (a Play Store fallback). */
async function cachedLink(h: Harness): Promise<{ app: TestApp; link: LinkRow }> {
  const app = await createTestApp(h.db);
  const link = await insertLink(h.db, app, { web_fallback_url: PLAY });
  expect((await h.get(`/${link.alias}`, { host: app.liveHost })).status).toBe(302);
  await h.cached(app, link.alias);
  return { app, link };
}

interface Timed {
  answer: Answer;
  ms: number;
}

async function timedGet(h: Harness, app: TestApp, link: LinkRow): Promise<Timed> {
  const started = performance.now();
  const answer = await h.get(`/${link.alias}`, { host: app.liveHost });
  return { answer, ms: performance.now() - started };
}

function playToken(answer: Answer): string {
  const token = /ls_click%3D([^&#%]*)/.exec(answer.headers.get('location') ?? '')?.[1];
  if (token === undefined) throw new Error(`no ls_click in ${answer.headers.get('location')}`);
  return token;
}

/** Redirects while frozen: a burst (one lookup call), then one every 100 ms for `forMs`. */
async function redirectWhileFrozen(
  h: Harness,
  app: TestApp,
  link: LinkRow,
  forMs: number,
): Promise<{ burst: Timed[]; spread: Timed[] }> {
  const burst = await Promise.all(Array.from({ length: 20 }, () => timedGet(h, app, link)));
  const spread: Timed[] = [];
  const until = Date.now() + forMs;
  while (Date.now() < until) {
    spread.push(await timedGet(h, app, link));
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { burst, spread };
}

/**
 * After a thaw: the client answers again, then passes until nothing is left to reconcile. No
 * early recovery of batches (as a pass on its timer): a batch taken by a flush that timed out
 * while frozen and ran late is still this flusher's and applied at once.
 */
async function flushAfterThaw(h: Harness): Promise<void> {
  await ready(h);
  await eventually(
    async () => {
      await h.resources.flusher.flush().catch(() => undefined);
      return h.resources.clicks.uncertainCount === 0 || undefined;
    },
    { timeoutMs: 10_000, what: 'every uncertain click reconciled' },
  );
  await h.resources.flusher.flush();
}

describe('Redis frozen', () => {
  it('redirects from Postgres within the bounds, and counts each click exactly once after a thaw, late lookups included', async () => {
    const h = await startBehindProxy();
    try {
      const { app, link } = await cachedLink(h);
      proxy.freeze();
      const { burst, spread } = await redirectWhileFrozen(h, app, link, 2_500);
      const answers = [...burst, ...spread];
      expect(answers.every(({ answer }) => answer.status === 302)).toBe(true);
      expect(Math.max(...answers.map(({ ms }) => ms))).toBeLessThan(ANSWER_BOUND_MS);
      // The burst's lookup timed out: uncertain, each waits to be reconciled. The backoff then
      // spared most of the spread a timeout of its own (their clicks were certainly not sent).
      const uncertain = h.resources.clicks.uncertainCount;
      expect(uncertain).toBeGreaterThanOrEqual(burst.length);
      expect(uncertain).toBeLessThan(answers.length);
      // A flush while frozen writes the unsent clicks to Postgres, and gives up on Redis in time.
      const started = performance.now();
      await h.resources.flusher.flush().catch(() => undefined);
      expect(performance.now() - started).toBeLessThan(3_000);

      proxy.thaw();
      // The burst's lookup script was held, not lost: it runs now, late, and stores its tokens.
      await ready(h);
      const tokens = burst.map(({ answer }) => playToken(answer));
      await eventually(
        async () => {
          const records = await Promise.all(
            tokens.map((token) =>
              storedClickToken(h.resources.deps.redis, h.config.REDIS_PREFIX, token),
            ),
          );
          return records.every((record) => record?.linkId === link.id) || undefined;
        },
        { timeoutMs: 5_000, what: 'the late lookup storing its click tokens' },
      );
      await flushAfterThaw(h);

      // The cached warm-up redirect, and each redirect while frozen: once each.
      expect(await clickCount(h.db, link.id)).toBe(1 + answers.length);
      expect(h.resources.clicks.clicksDropped).toBe(0);
    } finally {
      await h.close();
    }
  });

  it('counts each click once when the connection is cut while frozen (the lookups are lost or resent)', async () => {
    const h = await startBehindProxy();
    try {
      const { app, link } = await cachedLink(h);
      proxy.freeze();
      const { burst, spread } = await redirectWhileFrozen(h, app, link, 300);
      const answers = [...burst, ...spread];
      expect(answers.every(({ answer }) => answer.status === 302)).toBe(true);
      expect(h.resources.clicks.uncertainCount).toBeGreaterThan(0);
      // What the proxy held never reaches Redis; ioredis may resend it after reconnecting.
      proxy.cut();
      proxy.thaw();
      await flushAfterThaw(h);
      expect(await clickCount(h.db, link.id)).toBe(1 + answers.length);
      expect(h.resources.clicks.clicksDropped).toBe(0);
    } finally {
      await h.close();
    }
  });

  it('drops an uncertain click whose token expired before Redis answered, counting it in clicks_dropped, and never counts it twice', async () => {
    // A one-second token: reconciliation gives up 100 ms before it would expire.
    const h = await startBehindProxy({ CLICK_TOKEN_TTL_SECONDS: '1' });
    try {
      const { app, link } = await cachedLink(h);
      proxy.freeze();
      const { answer } = await timedGet(h, app, link);
      expect(answer.status).toBe(302);
      expect(h.resources.clicks.uncertainCount).toBe(1);
      await eventually(
        async () => {
          await h.resources.flusher.flush().catch(() => undefined);
          return h.resources.clicks.uncertainCount === 0 || undefined;
        },
        { timeoutMs: 5_000, what: 'the expired uncertain click dropped' },
      );
      expect(h.resources.clicks.clicksDropped).toBe(1);

      // Its lookup was held by the frozen Redis and runs now: counted once, by that lookup.
      proxy.thaw();
      await flushAfterThaw(h);
      expect(await clickCount(h.db, link.id)).toBe(1 + 1);
      expect(h.resources.clicks.clicksDropped).toBe(1);
    } finally {
      await h.close();
    }
  });

  it('shuts down within the bound, dropping the clicks still uncertain into clicks_dropped', async () => {
    const h = await startBehindProxy();
    const { app, link } = await cachedLink(h);
    proxy.freeze();
    const answers = await Promise.all(Array.from({ length: 5 }, () => timedGet(h, app, link)));
    expect(answers.every(({ answer }) => answer.status === 302)).toBe(true);
    expect(h.resources.clicks.uncertainCount).toBe(5);

    const started = performance.now();
    await h.close();
    // SHUTDOWN_GRACE_MS is 10 s by default; the stop takes a few command timeouts.
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(h.resources.clicks.uncertainCount).toBe(0);
    expect(h.resources.clicks.clicksDropped).toBe(5);
  });
});
