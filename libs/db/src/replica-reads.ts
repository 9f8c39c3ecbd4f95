import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from './schema';

/**
 * Reads sent to a streaming replica (DATABASE_READ_URL), with read-your-writes kept.
 *
 * A replica answer is served only when it cannot be older than what its reader must see:
 * - a miss (no row, an empty page) is asked again of the primary before it is answered, so a
 *   link is readable and redirects right after its 201;
 * - a read may carry a fence: a WAL position (`lsn`, the primary's `pg_current_wal_lsn()` taken
 *   after the caller's last write commits) or a time (`timeMs`, what the link host's cache
 *   generation gives). The replica's answer is served only when the replica had replayed at
 *   least that far *before the read began*: replay only moves forward, so a position observed
 *   earlier is a lower bound of what the read saw. Otherwise the primary answers.
 *
 * The replayed position is observed by poll() (every DATABASE_READ_POLL_MS, which also feeds the
 * lag gauge) and by a fresh check when a fenced read finds it short; the common read, long after
 * its app's last write, costs one statement on the replica and nothing more. The WAL position is
 * exact (no clocks involved); the time fence compares `pg_last_xact_replay_timestamp()` (the
 * primary's commit time of the last replayed transaction) with `timeMs` minus a clock-skew margin.
 * DATABASE_READ_URL must reach one replica (directly or through its own PgBouncer): positions
 * observed on one replica say nothing of another.
 *
 * A replica that fails is left alone until a poll succeeds again, so a dead replica costs one
 * short connect timeout, then nothing: reads go to the primary and readiness never asks it.
 */

/** Where a read was answered, and why the primary answered it. */
export type ReadSource = 'replica' | 'primary';
export type PrimaryReason = 'not_found' | 'stale' | 'replica_failed' | 'replica_down' | 'no_fence';

export interface ReadFence {
  /** The primary's WAL position after the reader's last write (pg_lsn as a number). */
  lsn?: bigint;
  /** A time (ms epoch) the answer must be at least as fresh as. */
  timeMs?: number;
}

/** What the replica had replayed when it was last asked. */
export interface ReplayPosition {
  /** Undefined for a server that is not in recovery: it has everything (a primary). */
  lsn: bigint | undefined;
  /** Commit time (ms epoch, primary clock) of the last replayed transaction; null before any. */
  replayedAtMs: number | null;
  /** Seconds the replica is behind: 0 when it has replayed all it received. */
  lagSeconds: number;
}

export interface FencedRead<T> {
  /** The statement, run on the replica first, on the primary when its answer cannot be served. */
  run: (db: Kysely<Database>) => Promise<T>;
  /** False for a miss (no row, an empty page): the primary is asked before it is answered. */
  found: (result: T) => boolean;
  /**
   * What the answer must be at least as fresh as: given, or looked up once the answer says whose
   * data it is (the key's app). 'unknown' (the fence store failed) sends the read to the primary.
   */
  fence: ReadFence | 'unknown' | ((result: T) => Promise<ReadFence | 'unknown'>);
}

export interface ReplicaReadsOptions {
  /** The replica's Kysely; undefined when no DATABASE_READ_URL is set: every read is primary's. */
  replica: Kysely<Database> | undefined;
  primary: Kysely<Database>;
  /** Subtracted from a time fence for the clock difference between the two machines. */
  clockSkewMs?: number;
  /** Told of each read's source (a counter). */
  onRead?: (source: ReadSource, reason?: PrimaryReason) => void;
  /** Told when the replica fails (a log line); reads go on on the primary. */
  onReplicaError?: (error: unknown) => void;
  /** How the replay position is read (replayPositionOf); the policy's unit tests give their own. */
  replayPosition?: (replica: Kysely<Database>) => Promise<ReplayPosition>;
}

/** pg_lsn's text form `X/Y` (two hex halves) as one number, comparable. */
export function parseLsn(text: string): bigint {
  const match = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/.exec(text);
  if (!match) throw new Error(`not a pg_lsn: ${text}`);
  return (BigInt(`0x${match[1]}`) << 32n) | BigInt(`0x${match[2]}`);
}

/**
 * The primary's WAL position now: asked after a commit returned, it is at or past that commit's
 * record, so a replica that has replayed this far has the commit.
 */
export async function primaryWalPosition(db: Kysely<Database>): Promise<bigint> {
  const { rows } = await sql<{ lsn: string }>`SELECT pg_current_wal_lsn()::text AS lsn`.execute(db);
  const row = rows.at(0);
  if (!row) throw new Error('pg_current_wal_lsn returned no row');
  return parseLsn(row.lsn);
}

/** Whether what was replayed covers the fence (pure: the rule, unit-tested). */
export function replayCovers(
  position: ReplayPosition | undefined,
  fence: ReadFence,
  clockSkewMs: number,
): boolean {
  if (fence.lsn === undefined && fence.timeMs === undefined) return true;
  if (position === undefined) return false;
  // Not in recovery: the server the read URL names is a primary, it has every write.
  if (position.lsn === undefined) return true;
  if (fence.lsn !== undefined && position.lsn < fence.lsn) return false;
  if (fence.timeMs !== undefined) {
    if (position.replayedAtMs === null || position.replayedAtMs < fence.timeMs - clockSkewMs) {
      return false;
    }
  }
  return true;
}

/** What the replica reports of its replay: one statement, also run by the lag poller. */
export async function replayPositionOf(replica: Kysely<Database>): Promise<ReplayPosition> {
  const { rows } = await sql<PositionRow>`
    SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn()::text END AS lsn,
           (extract(epoch FROM pg_last_xact_replay_timestamp()) * 1000)::float8 AS replayed_at_ms,
           CASE WHEN NOT pg_is_in_recovery()
                  OR pg_last_wal_receive_lsn() IS NOT DISTINCT FROM pg_last_wal_replay_lsn()
                THEN 0
                ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0)
           END::float8 AS lag_seconds`.execute(replica);
  const row = rows.at(0);
  if (!row) throw new Error('the replay position query returned no row');
  return {
    lsn: row.lsn === null ? undefined : parseLsn(row.lsn),
    replayedAtMs: row.replayed_at_ms,
    lagSeconds: Math.max(0, row.lag_seconds),
  };
}

interface PositionRow {
  lsn: string | null;
  replayed_at_ms: number | null;
  lag_seconds: number;
}

export class ReplicaReads {
  private position: ReplayPosition | undefined;
  /** Set when the replica failed; cleared by the next poll that succeeds. */
  private down = false;
  private readonly clockSkewMs: number;
  private onRead: NonNullable<ReplicaReadsOptions['onRead']>;
  private readonly onReplicaError: NonNullable<ReplicaReadsOptions['onReplicaError']>;

  constructor(private readonly options: ReplicaReadsOptions) {
    this.clockSkewMs = options.clockSkewMs ?? 0;
    this.onRead = options.onRead ?? (() => undefined);
    this.onReplicaError = options.onReplicaError ?? (() => undefined);
  }

  /** Tells `onRead` of each read's source from now on (the service's metrics). */
  observe(onRead: NonNullable<ReplicaReadsOptions['onRead']>): void {
    this.onRead = onRead;
  }

  get enabled(): boolean {
    return this.options.replica !== undefined;
  }

  /** The replica's lag in seconds for the gauge: 0 without a replica, or before the first poll. */
  get lagSeconds(): number {
    return this.position?.lagSeconds ?? 0;
  }

  /** Asks the replica how far it has replayed; a failure marks it down until a poll succeeds. */
  async poll(): Promise<ReplayPosition | undefined> {
    const replica = this.options.replica;
    if (!replica) return undefined;
    try {
      const position = await (this.options.replayPosition ?? replayPositionOf)(replica);
      // Replay only moves forward; keep the furthest seen (two polls may answer out of order).
      const known = this.position;
      if (known?.lsn === undefined || position.lsn === undefined || position.lsn >= known.lsn) {
        this.position = position;
      }
      this.down = false;
      return this.position;
    } catch (error) {
      this.markDown(error);
      return undefined;
    }
  }

  /** The primary's current WAL position: the fence a writer records after its commit. */
  primaryPosition(): Promise<bigint> {
    return primaryWalPosition(this.options.primary);
  }

  /** Runs a read on the replica when its answer can be served, else on the primary. */
  async read<T>(read: FencedRead<T>): Promise<T> {
    const { replica, primary } = this.options;
    if (!replica) {
      this.onRead('primary');
      return read.run(primary);
    }
    if (this.down) return this.onPrimary(read, 'replica_down');
    if (read.fence === 'unknown') return this.onPrimary(read, 'no_fence');

    // A fence known up front that the last observation does not cover: one fresh look first,
    // rather than a replica read whose answer could not be served.
    let before = this.position;
    if (typeof read.fence !== 'function' && !replayCovers(before, read.fence, this.clockSkewMs)) {
      before = await this.poll();
      // poll() answers nothing when the replica failed (and marks it down).
      if (before === undefined) return this.onPrimary(read, 'replica_failed');
      if (!replayCovers(before, read.fence, this.clockSkewMs)) {
        return this.onPrimary(read, 'stale');
      }
    }

    let result: T;
    try {
      result = await read.run(replica);
    } catch (error) {
      this.markDown(error);
      return this.onPrimary(read, 'replica_failed');
    }
    if (!read.found(result)) return this.onPrimary(read, 'not_found');
    if (typeof read.fence === 'function') {
      const fence = await read.fence(result).catch(() => 'unknown' as const);
      if (fence === 'unknown') return this.onPrimary(read, 'no_fence');
      if (!replayCovers(before, fence, this.clockSkewMs)) return this.onPrimary(read, 'stale');
    }
    this.onRead('replica');
    return result;
  }

  private async onPrimary<T>(read: FencedRead<T>, reason: PrimaryReason): Promise<T> {
    this.onRead('primary', reason);
    return read.run(this.options.primary);
  }

  private markDown(error: unknown): void {
    if (!this.down) this.onReplicaError(error);
    this.down = true;
  }
}
