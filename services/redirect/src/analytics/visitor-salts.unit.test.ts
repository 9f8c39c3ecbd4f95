import { createLogger } from '@linkservice/logger';
import type { RedisClient } from '@linkservice/lifecycle';
import { DAY_MS, VisitorSalts, visitorSaltKey } from './visitor-salts';

const PREFIX = 'unit';
const MINUTE_MS = 60 * 1000;
/** A UTC day (days since the epoch) well inside the salts' lifetime arithmetic. */
const DAY = 20_500;
const ADDRESS = '198.51.100.7';
const USER_AGENT = 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X)';

interface StoredSalt {
  value: string;
  expiresAt: number;
}

/**
 * The one Redis command VisitorSalts sends (`SET key value PXAT at NX GET`), kept in a map; every
 * call is recorded, so a test sees which days' salts were asked for and when.
 */
function fakeRedis() {
  const store = new Map<string, StoredSalt>();
  const sets: string[] = [];
  const redis = {
    status: 'ready',
    call(command: string, ...args: string[]): Promise<string | null> {
      const [key, value, pxat, at, nx, get] = args;
      if (command !== 'SET' || pxat !== 'PXAT' || nx !== 'NX' || get !== 'GET') {
        throw new Error(`unexpected call ${command} ${args.join(' ')}`);
      }
      sets.push(key);
      const existing = store.get(key);
      if (existing === undefined) store.set(key, { value, expiresAt: Number(at) });
      return Promise.resolve(existing?.value ?? null);
    },
  };
  return { redis: redis as unknown as RedisClient, store, sets };
}

function salts(now: { at: number }) {
  const fake = fakeRedis();
  const visitorSalts = new VisitorSalts({
    redis: fake.redis,
    redisPrefix: PREFIX,
    logger: createLogger('redirect', 'silent'),
    clock: () => now.at,
  });
  return { ...fake, visitorSalts };
}

/** Lets a load that visitorOf started (not awaited) run to its end. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await Promise.resolve();
}

const key = (day: number) => visitorSaltKey(PREFIX, day);
const at = (day: number, ms: number) => day * DAY_MS + ms;

describe('VisitorSalts, with an injected clock', () => {
  it('stores a day’s salt in Redis until 48 hours after the day began, and makes visitors with it', async () => {
    const now = { at: at(DAY, 12 * 60 * MINUTE_MS) };
    const { visitorSalts, store } = salts(now);
    // Nothing loaded yet: no visitor (and no Redis call on the request's path but the load).
    expect(visitorSalts.visitorOf(now.at, ADDRESS, USER_AGENT)).toBe('');
    await visitorSalts.refresh();
    const visitor = visitorSalts.visitorOf(now.at, ADDRESS, USER_AGENT);
    expect(visitor).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(visitorSalts.visitorOf(now.at + 1, ADDRESS, USER_AGENT)).toBe(visitor);
    expect(visitorSalts.visitorOf(now.at, '198.51.100.8', USER_AGENT)).not.toBe(visitor);
    expect([...store.keys()]).toEqual([key(DAY)]);
    expect(store.get(key(DAY))?.expiresAt).toBe(at(DAY + 2, 0));
  });

  it('preloads tomorrow’s salt only in the last 5 minutes of the day', async () => {
    const now = { at: at(DAY, DAY_MS - 5 * MINUTE_MS - 1) };
    const { visitorSalts, sets } = salts(now);
    await visitorSalts.refresh();
    expect(sets).toEqual([key(DAY)]);
    now.at += 1;
    await visitorSalts.refresh();
    expect(sets).toEqual([key(DAY), key(DAY + 1)]);
    // Loaded before midnight: the first click of the day has its visitor.
    now.at = at(DAY + 1, 0);
    expect(visitorSalts.visitorOf(now.at, ADDRESS, USER_AGENT)).not.toBe('');
    expect(sets).toEqual([key(DAY), key(DAY + 1)]);
  });

  it('forgets a day’s salt when the day ends, and never asks for a past day’s again', async () => {
    const now = { at: at(DAY, DAY_MS - 2 * MINUTE_MS) };
    const { visitorSalts, sets, store } = salts(now);
    await visitorSalts.refresh();
    const lastClick = now.at;
    const yesterdays = visitorSalts.visitorOf(lastClick, ADDRESS, USER_AGENT);
    expect(yesterdays).not.toBe('');

    // Past midnight, before the minute's refresh has run: the ended day's salt is gone already.
    now.at = at(DAY + 1, 1);
    expect(visitorSalts.visitorOf(lastClick, ADDRESS, USER_AGENT)).toBe('');
    await settle();
    expect(visitorSalts.visitorOf(lastClick, ADDRESS, USER_AGENT)).toBe('');
    // Still in Redis (until the end of today), yet never asked for again by this process.
    expect(store.has(key(DAY))).toBe(true);
    const setsBefore = sets.filter((k) => k === key(DAY)).length;
    await visitorSalts.refresh();
    now.at = at(DAY + 1, 10 * MINUTE_MS);
    await visitorSalts.refresh();
    expect(visitorSalts.visitorOf(lastClick, ADDRESS, USER_AGENT)).toBe('');
    await settle();
    expect(sets.filter((k) => k === key(DAY)).length).toBe(setsBefore);

    // Today's visitor comes from another salt: the same person is not linkable across days.
    const todays = visitorSalts.visitorOf(now.at, ADDRESS, USER_AGENT);
    expect(todays).not.toBe('');
    expect(todays).not.toBe(yesterdays);
  });

  it('never makes a salt for a day that ended, even one whose salt Redis no longer has', async () => {
    const now = { at: at(DAY + 3, 0) };
    const { visitorSalts, sets } = salts(now);
    await visitorSalts.refresh();
    expect(visitorSalts.visitorOf(at(DAY, 5_000), ADDRESS, USER_AGENT)).toBe('');
    expect(visitorSalts.visitorOf(at(DAY + 2, DAY_MS - 1), ADDRESS, USER_AGENT)).toBe('');
    await settle();
    expect(sets).toEqual([key(DAY + 3)]);
  });
});
