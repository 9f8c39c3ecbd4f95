import type { Click } from './click-buffers';
import { UncertainClicks, UnrecordedClicks } from './click-buffers';

const click = (n: number, at = n, linkId = `lnk_${n % 2}`): Click => ({
  linkId,
  tokenHash: `hash${n}`,
  at,
  analytics: null,
});

describe('UnrecordedClicks', () => {
  it('counts every click per link and keeps at most maxTokens tokens, dropping the oldest a tenth at a time', () => {
    const clicks = new UnrecordedClicks(10);
    for (let n = 0; n < 12; n++) clicks.add(click(n));
    // 11 > 10: down to 9, then the 12th: 10 tokens; every click still counted.
    expect(clicks.tokenCount).toBe(10);
    expect(clicks.clickCount).toBe(12);
    expect(clicks.takeDroppedTokens()).toBe(2);
    expect(clicks.takeDroppedTokens()).toBe(0);
    expect(clicks.nextTokens(3).map((c) => c.tokenHash)).toEqual(['hash2', 'hash3', 'hash4']);
    expect(clicks.takeCounts()).toEqual(
      new Map([
        ['lnk_0', 6],
        ['lnk_1', 6],
      ]),
    );
    expect(clicks.clickCount).toBe(0);
    expect(clicks.tokenCount).toBe(10);
  });

  it('forgets expired tokens, and only the stored ones once Redis took them', () => {
    const clicks = new UnrecordedClicks(100);
    for (let n = 0; n < 5; n++) clicks.add(click(n, n * 1_000));
    clicks.expireTokens(10_000, 8_000);
    // Expired at 10 s: the clicks at 0, 1 and 2 s (a token lives 8 s).
    expect(clicks.nextTokens(10).map((c) => c.at)).toEqual([3_000, 4_000]);
    const [first, second] = clicks.nextTokens(10);
    clicks.add(click(9, 9_000));
    clicks.tokensStored([second]);
    expect(clicks.nextTokens(10)).toEqual([first, click(9, 9_000)]);
  });
});

describe('UncertainClicks', () => {
  it('keeps at most max, dropping the oldest a tenth at a time, and says how many went', () => {
    const waiting = new UncertainClicks(10);
    const dropped = Array.from({ length: 13 }, (_, n) => waiting.add(click(n)));
    // The 11th: down to 9; the 13th: 11 again, down to 9.
    expect(dropped).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2]);
    expect(waiting.count).toBe(9);
    expect(waiting.next(1)[0].tokenHash).toBe('hash4');
  });

  it('drops the clicks made by a deadline, settles by identity and drops all at the end', () => {
    const waiting = new UncertainClicks(100);
    for (let n = 0; n < 6; n++) waiting.add(click(n));
    expect(waiting.dropMadeBy(1)).toBe(2);
    const chunk = waiting.next(2);
    expect(chunk.map((c) => c.at)).toEqual([2, 3]);
    // Added while the chunk was in flight: unaffected by its settling.
    waiting.add(click(7));
    waiting.settled(chunk);
    expect(waiting.next(10).map((c) => c.at)).toEqual([4, 5, 7]);
    expect(waiting.dropAll()).toBe(3);
    expect(waiting.count).toBe(0);
  });
});
