import { Writable } from 'node:stream';
import { createLogger } from '@linkservice/logger';
import { unreachableRedis } from '@linkservice/testing';
import { RedisBackoff } from '../redis-backoff';
import { ClickCounter } from './click-counter';

/** Every `clicks_dropped` warning the counter logs, as parsed lines. */
function counterWithLog(maxUncertain: number) {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const counter = new ClickCounter({
    // Never used: dropping and reporting make no Redis call.
    redis: unreachableRedis(),
    redisPrefix: 'unit',
    backoff: new RedisBackoff(1_000),
    tokenTtlMs: 3_600_000,
    logger: createLogger('redirect', 'warn', destination),
    maxUncertain,
  });
  const drops = () =>
    lines
      .filter((line) => line.clicks_dropped !== undefined)
      .map(({ clicks_dropped, clicks }) => ({
        clicks_dropped,
        clicks,
      }));
  return { counter, drops };
}

function uncertainClick(n: number) {
  return { linkId: `lnk_${n}`, tokenHash: `hash${n}`, at: Date.now(), analytics: null };
}

describe('ClickCounter: clicks_dropped is never silent', () => {
  it('logs the first drop at once, holds later ones to one warning per window, and reports them when it ends', async () => {
    const { counter, drops } = counterWithLog(10);
    // The 11th uncertain click is over the cap: the oldest go, down to 9 waiting.
    for (let n = 0; n < 11; n++) await counter.recordClick(uncertainClick(n), 'uncertain');
    expect(drops()).toEqual([{ clicks_dropped: 2, clicks: 2 }]);
    for (let n = 11; n < 13; n++) await counter.recordClick(uncertainClick(n), 'uncertain');
    expect(counter.clicksDropped).toBe(4);
    // Inside the window: counted, not yet logged.
    expect(drops()).toHaveLength(1);
    counter.reportDrops(Date.now() + 10_001);
    expect(drops()).toEqual([
      { clicks_dropped: 2, clicks: 2 },
      { clicks_dropped: 4, clicks: 2 },
    ]);
    // Nothing new: no line.
    counter.reportDrops(Date.now() + 30_000);
    expect(drops()).toHaveLength(2);
  });

  it('reports at shutdown every drop a window held back, with the clicks still waiting', async () => {
    const { counter, drops } = counterWithLog(10);
    for (let n = 0; n < 13; n++) await counter.recordClick(uncertainClick(n), 'uncertain');
    expect(drops()).toEqual([{ clicks_dropped: 2, clicks: 2 }]);
    expect(counter.dropUncertain()).toBe(9);
    expect(counter.clicksDropped).toBe(13);
    expect(drops()).toEqual([
      { clicks_dropped: 2, clicks: 2 },
      { clicks_dropped: 13, clicks: 11 },
    ]);
  });
});

describe('ClickCounter.recordClick: where a click goes', () => {
  const click = { linkId: 'lnk_1', tokenHash: 'hash', at: Date.now(), analytics: null };
  function counter(backoff = new RedisBackoff(1_000)) {
    return new ClickCounter({
      // Not connected: a call to it is certainly not sent.
      redis: unreachableRedis(),
      redisPrefix: 'unit',
      tokenTtlMs: 3_600_000,
      logger: createLogger('redirect', 'silent'),
      backoff,
    });
  }
  const where = (c: ClickCounter) => ({
    unrecorded: c.unrecordedCount,
    untokened: c.untokenedCount,
    uncertain: c.uncertainCount,
  });

  it('leaves a click its lookup counted alone', async () => {
    const c = counter();
    await c.recordClick(click, 'counted');
    expect(where(c)).toEqual({ unrecorded: 0, untokened: 0, uncertain: 0 });
  });

  it('keeps a click whose lookup may have counted it for reconciliation, never for Postgres', async () => {
    const c = counter();
    await c.recordClick(click, 'uncertain');
    expect(where(c)).toEqual({ unrecorded: 0, untokened: 0, uncertain: 1 });
  });

  it('counts in memory a click Redis was certainly not asked for', async () => {
    const c = counter();
    await c.recordClick(click, 'not-sent');
    expect(where(c)).toEqual({ unrecorded: 1, untokened: 1, uncertain: 0 });
  });

  it('counts a fresh click in memory during a backoff, and when its own call is not sent', async () => {
    const tripped = new RedisBackoff(60_000);
    tripped.trip();
    const backingOff = counter(tripped);
    await backingOff.recordClick(click, 'fresh');
    expect(where(backingOff)).toEqual({ unrecorded: 1, untokened: 1, uncertain: 0 });
    const disconnected = counter();
    await disconnected.recordClick(click, 'fresh');
    expect(where(disconnected)).toEqual({ unrecorded: 1, untokened: 1, uncertain: 0 });
    expect(disconnected.takeUnrecorded()).toEqual(new Map([['lnk_1', 1]]));
    expect(disconnected.unrecordedCount).toBe(0);
  });
});
