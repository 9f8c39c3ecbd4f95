import { parseLsn, replayCovers } from './replica-reads';
import type { ReplayPosition } from './replica-reads';

describe('parseLsn', () => {
  it('reads both hex halves, so positions compare as numbers', () => {
    expect(parseLsn('0/16B3748')).toBe(0x16b3748n);
    expect(parseLsn('1/0')).toBe(1n << 32n);
    expect(parseLsn('0/FFFFFFFF') < parseLsn('1/0')).toBe(true);
  });

  it('refuses what is not a pg_lsn', () => {
    expect(() => parseLsn('16B3748')).toThrow(/not a pg_lsn/);
  });
});

describe('replayCovers', () => {
  const at = (lsn: bigint | undefined, replayedAtMs: number | null = 1_000): ReplayPosition => ({
    lsn,
    replayedAtMs,
    lagSeconds: 0,
  });

  it('serves any read without a fence, even before the first observation', () => {
    expect(replayCovers(undefined, {}, 0)).toBe(true);
  });

  it('needs an observation at or past the fence position', () => {
    expect(replayCovers(undefined, { lsn: 10n }, 0)).toBe(false);
    expect(replayCovers(at(9n), { lsn: 10n }, 0)).toBe(false);
    expect(replayCovers(at(10n), { lsn: 10n }, 0)).toBe(true);
  });

  it('compares a time fence with the last replayed commit, less the clock-skew margin', () => {
    expect(replayCovers(at(5n, 1_000), { timeMs: 1_001 }, 0)).toBe(false);
    expect(replayCovers(at(5n, 1_000), { timeMs: 1_050 }, 50)).toBe(true);
    expect(replayCovers(at(5n, null), { timeMs: 1 }, 50)).toBe(false);
  });

  it('needs both when a read carries both', () => {
    expect(replayCovers(at(10n, 1_000), { lsn: 10n, timeMs: 2_000 }, 0)).toBe(false);
    expect(replayCovers(at(9n, 3_000), { lsn: 10n, timeMs: 2_000 }, 0)).toBe(false);
  });

  it('takes a server that is not in recovery (a primary) as having everything', () => {
    expect(replayCovers(at(undefined, null), { lsn: 10n, timeMs: 2_000 }, 0)).toBe(true);
  });
});
