import type { Kysely } from 'kysely';
import { parseLsn, replayCovers, ReplicaReads } from './replica-reads';
import type { FencedRead, ReplayPosition } from './replica-reads';
import type { Database } from './schema';

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

describe('ReplicaReads.read', () => {
  // Stand-ins for the two Kysely instances: the policy only hands them to `run`.
  const primary = { name: 'primary' } as unknown as Kysely<Database>;
  const replica = { name: 'replica' } as unknown as Kysely<Database>;
  type Source = 'primary' | 'replica';
  const nameOf = (db: Kysely<Database>): Source => (db as unknown as { name: Source }).name;

  /** Reads whose answer is `found` on each server; records where each went. */
  function setUp(options: { replicaAt?: bigint; failing?: boolean } = {}) {
    const sources: string[] = [];
    let replicaAt = options.replicaAt ?? 100n;
    let failing = options.failing ?? false;
    const reads = new ReplicaReads({
      primary,
      replica,
      replayPosition: () =>
        failing
          ? Promise.reject(new Error('replica away'))
          : Promise.resolve({ lsn: replicaAt, replayedAtMs: 5_000, lagSeconds: 0 }),
    });
    reads.observe((source, reason) => sources.push(reason ? `${source}:${reason}` : source));
    return {
      reads,
      sources,
      set(next: { replicaAt?: bigint; failing?: boolean }) {
        replicaAt = next.replicaAt ?? replicaAt;
        failing = next.failing ?? failing;
      },
    };
  }
  const read = (
    found: Record<Source, boolean>,
    fence: FencedRead<{ on: Source; found: boolean }>['fence'],
  ): FencedRead<{ on: Source; found: boolean }> => ({
    run: (db) => Promise.resolve({ on: nameOf(db), found: found[nameOf(db)] }),
    found: (result) => result.found,
    fence,
  });

  it('serves a replica answer that is found and covers the fence', async () => {
    const { reads, sources } = setUp({ replicaAt: 100n });
    await reads.poll();
    const answer = await reads.read(read({ primary: true, replica: true }, { lsn: 100n }));
    expect(answer.on).toBe('replica');
    expect(sources).toEqual(['replica']);
  });

  it('asks the primary before answering a replica miss', async () => {
    const { reads, sources } = setUp();
    await reads.poll();
    const answer = await reads.read(read({ primary: true, replica: false }, {}));
    expect(answer).toEqual({ on: 'primary', found: true });
    expect(sources).toEqual(['primary:not_found']);
  });

  it('looks again when the fence is past what it saw, and reads the primary while still short', async () => {
    const { reads, sources, set } = setUp({ replicaAt: 90n });
    await reads.poll();
    expect((await reads.read(read({ primary: true, replica: true }, { lsn: 100n }))).on).toBe(
      'primary',
    );
    set({ replicaAt: 100n });
    expect((await reads.read(read({ primary: true, replica: true }, { lsn: 100n }))).on).toBe(
      'replica',
    );
    expect(sources).toEqual(['primary:stale', 'replica']);
  });

  it('judges a fence found from the answer by what was replayed before the read', async () => {
    const { reads, sources } = setUp({ replicaAt: 90n });
    await reads.poll();
    const late = await reads.read(
      read({ primary: true, replica: true }, () => Promise.resolve({ lsn: 95n })),
    );
    expect(late.on).toBe('primary');
    const unknown = await reads.read(
      read({ primary: true, replica: true }, () => Promise.resolve('unknown' as const)),
    );
    expect(unknown.on).toBe('primary');
    expect(sources).toEqual(['primary:stale', 'primary:no_fence']);
  });

  it('leaves a failed replica alone until a poll reaches it again', async () => {
    const { reads, sources, set } = setUp({ failing: true });
    await reads.poll();
    expect((await reads.read(read({ primary: true, replica: true }, {}))).on).toBe('primary');
    set({ failing: false });
    await reads.poll();
    expect((await reads.read(read({ primary: true, replica: true }, {}))).on).toBe('replica');
    expect(sources).toEqual(['primary:replica_down', 'replica']);
  });

  it('reads the primary alone without a replica', async () => {
    const reads = new ReplicaReads({ primary, replica: undefined });
    expect(reads.enabled).toBe(false);
    expect(reads.lagSeconds).toBe(0);
    expect((await reads.read(read({ primary: true, replica: true }, { lsn: 1n }))).on).toBe(
      'primary',
    );
  });
});
