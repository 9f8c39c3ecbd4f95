import { Writable } from 'node:stream';
import { createLogger } from '@linkservice/logger';
import { unreachableRedis } from '@linkservice/testing';
import { ClickCounter } from './click-counter';
import { clickKeys } from './click-keys';

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
    keys: clickKeys('unit'),
    redisPrefix: 'unit',
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
  return { linkId: `lnk_${n}`, tokenHash: `hash${n}`, at: Date.now() };
}

describe('ClickCounter: clicks_dropped is never silent', () => {
  it('logs the first drop at once, holds later ones to one warning per window, and reports them when it ends', () => {
    const { counter, drops } = counterWithLog(10);
    // The 11th uncertain click is over the cap: the oldest go, down to 9 waiting.
    for (let n = 0; n < 11; n++) counter.addUncertain(uncertainClick(n));
    expect(drops()).toEqual([{ clicks_dropped: 2, clicks: 2 }]);
    for (let n = 11; n < 13; n++) counter.addUncertain(uncertainClick(n));
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

  it('reports at shutdown every drop a window held back, with the clicks still waiting', () => {
    const { counter, drops } = counterWithLog(10);
    for (let n = 0; n < 13; n++) counter.addUncertain(uncertainClick(n));
    expect(drops()).toEqual([{ clicks_dropped: 2, clicks: 2 }]);
    expect(counter.dropUncertain()).toBe(9);
    expect(counter.clicksDropped).toBe(13);
    expect(drops()).toEqual([
      { clicks_dropped: 2, clicks: 2 },
      { clicks_dropped: 13, clicks: 11 },
    ]);
  });
});
