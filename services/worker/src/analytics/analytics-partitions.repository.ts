import type { Database } from '@linkservice/db';
import type { Kysely, RawBuilder, Transaction } from 'kysely';
import { sql } from 'kysely';
import type {
  AnalyticsRetention,
  AnalyticsTable,
  Month,
  PartitionedTable,
} from './analytics-months';
import {
  addMonths,
  boundLiteral,
  isPartitioned,
  monthsToEnsure,
  monthStart,
  PARTITION_KEYS,
  PARTITIONED_TABLES,
  parsePartitionName,
  partitionName,
  RETENTION_KEYS,
  retentionCutoffs,
} from './analytics-months';

/**
 * How long a partition change waits for a table lock before giving up until the next run: a
 * long read of the DEFAULT partition (ATTACH locks it) or of the parent (DETACH) must not leave
 * the flusher's writes queued behind the waiting change.
 */
const PARTITION_LOCK_TIMEOUT_MS = 5_000;
/** SQLSTATE of a lock wait past lock_timeout. */
const LOCK_NOT_AVAILABLE = '55P03';

export interface EnsuredMonths {
  /** Partitions created. */
  created: number;
  /** Rows moved into them out of the DEFAULT partitions. */
  moved: number;
  /** Months left for the next run: another worker's change held the table past the lock timeout. */
  busy: number;
}

/** Postgres' undefined_table: a relation named in a statement no longer exists. */
function isUndefinedTable(error: unknown): boolean {
  return (
    typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '42P01'
  );
}

/** Rows past the key's cutoff (a parameter, not spliced). */
function olderThan(table: AnalyticsTable, cutoff: Date): RawBuilder<boolean> {
  const key = RETENTION_KEYS[table];
  const value = key === 'hour' ? cutoff.toISOString() : cutoff.toISOString().slice(0, 10);
  return key === 'hour'
    ? sql<boolean>`${sql.ref(key)} < ${value}::timestamptz`
    : sql<boolean>`${sql.ref(key)} < ${value}::date`;
}

/**
 * The worker's upkeep of the analytics tables (the click-analytics migration): monthly
 * partitions created ahead of the clicks, and the rows past ANALYTICS_*_RETENTION_DAYS removed
 * (whole months dropped, the month straddling a cutoff deleted in slices). Every worker may run
 * all of it: changes to a table's partitions take a transaction-scoped advisory lock of that
 * table (another worker's change is skipped, not waited for), and deletes are idempotent. No
 * session state: each change is one transaction (PgBouncer in transaction mode).
 */
export class AnalyticsPartitionsRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly retention: AnalyticsRetention,
  ) {}

  /**
   * Creates the monthly partitions of the previous month through three ahead of `now` (UTC) that
   * are missing, on every partitioned table; a month already past the table's retention is not
   * created. Rows of a new month already in the DEFAULT partition are moved into it, and both
   * tables analyzed.
   */
  async ensureMonths(now: Date): Promise<EnsuredMonths> {
    const cutoffs = retentionCutoffs(now, this.retention);
    const existing = await this.partitionsOf(this.db);
    const result: EnsuredMonths = { created: 0, moved: 0, busy: 0 };
    // A table that fails (a lock wait past its timeout) does not hold up the others' months.
    const failures: unknown[] = [];
    for (const table of PARTITIONED_TABLES) {
      try {
        for (const month of monthsToEnsure(now)) {
          if (existing.has(partitionName(table, month))) continue;
          if (monthStart(addMonths(month, 1)) <= cutoffs[table]) continue;
          const outcome = await this.createMonth(table, month);
          if (outcome === 'busy') result.busy += 1;
          else if (outcome !== 'exists') {
            result.created += 1;
            result.moved += outcome.moved;
            if (outcome.moved > 0) await this.analyzeMoved(table, month);
          }
        }
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length > 0) throw failures[0];
    return result;
  }

  /**
   * One month of one table, in one transaction. The parent is locked against writes (SHARE ROW
   * EXCLUSIVE: reads go on, the flusher's upserts wait) so no row of the month can reach the
   * DEFAULT partition between the move and the attach. The rows are copied into the new table
   * BEFORE it is attached: the row triggers of link_click_days (an app's unique visitors add up
   * its links') are the parent's, cloned onto partitions only at attach, so the move fires none.
   * ATTACH then builds the primary key on the filled table and checks the DEFAULT holds no row
   * of the month (the delete made sure).
   */
  private async createMonth(
    table: PartitionedTable,
    month: Month,
  ): Promise<'busy' | 'exists' | { moved: number }> {
    return this.db.transaction().execute(async (tx) => {
      if (!(await this.lockTable(tx, table))) return 'busy';
      const name = partitionName(table, month);
      if ((await this.partitionsOf(tx, table)).has(name)) return 'exists';
      const parent = sql.table(table);
      const part = sql.table(name);
      const defaultPart = sql.table(`${table}_default`);
      const key = sql.ref(PARTITION_KEYS[table]);
      const from = sql.raw(boundLiteral(table, monthStart(month)));
      const to = sql.raw(boundLiteral(table, monthStart(addMonths(month, 1))));
      await sql`LOCK TABLE ${parent} IN SHARE ROW EXCLUSIVE MODE`.execute(tx);
      await sql`
        CREATE TABLE ${part} (LIKE ${parent} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)`.execute(tx);
      const moved = await sql`
        INSERT INTO ${part} SELECT * FROM ${defaultPart}
        WHERE ${key} >= ${from} AND ${key} < ${to}`.execute(tx);
      await sql`DELETE FROM ${defaultPart} WHERE ${key} >= ${from} AND ${key} < ${to}`.execute(tx);
      await sql`
        ALTER TABLE ${parent} ATTACH PARTITION ${part} FOR VALUES FROM (${from}) TO (${to})`.execute(
        tx,
      );
      return { moved: Number(moved.numAffectedRows ?? 0) };
    });
  }

  /**
   * Statistics of a month filled by moving rows out of the DEFAULT, and of the DEFAULT they
   * left: the new table has none and the DEFAULT's still count the moved rows until autovacuum
   * visits them (never, where it is off). Meanwhile the planner takes the new month for nearly
   * empty and reads whole months of an app to find a few links' days (a 10 ms read of the
   * analytics API took seconds). After the commit: flushes wait while the parent is locked.
   */
  private async analyzeMoved(table: PartitionedTable, month: Month): Promise<void> {
    await sql`
      ANALYZE ${sql.table(partitionName(table, month))}, ${sql.table(`${table}_default`)}`.execute(
      this.db,
    );
  }

  /**
   * Detaches and drops the monthly partitions of `table` whose month ended before its retention
   * cutoff at `now`; returns how many. One transaction per partition; a table another worker is
   * changing is left for the next run.
   */
  async dropExpiredMonths(table: PartitionedTable, now: Date): Promise<number> {
    const cutoff = retentionCutoffs(now, this.retention)[table];
    const expired = [...(await this.partitionsOf(this.db, table)).entries()]
      .filter(([, month]) => month !== null && monthStart(addMonths(month, 1)) <= cutoff)
      .map(([name]) => name);
    let dropped = 0;
    for (const name of expired) {
      const done = await this.db.transaction().execute(async (tx) => {
        if (!(await this.lockTable(tx, table))) return false;
        if (!(await this.partitionsOf(tx, table)).has(name)) return false;
        await sql`ALTER TABLE ${sql.table(table)} DETACH PARTITION ${sql.table(name)}`.execute(tx);
        await sql`DROP TABLE ${sql.table(name)}`.execute(tx);
        return true;
      });
      if (done) dropped += 1;
    }
    return dropped;
  }

  /**
   * Deletes at most `limit` rows of `table` past its retention cutoff at `now`, by ctid in
   * bounded statements; returns how many. On a partitioned table, only the partitions that can
   * hold such rows are visited (the month straddling the cutoff, the DEFAULT, older months not
   * dropped yet), each on its own: a ctid names a row only within one partition. A partition
   * another worker drops meanwhile is passed over.
   */
  async deleteExpiredSlice(table: AnalyticsTable, now: Date, limit: number): Promise<number> {
    const cutoff = retentionCutoffs(now, this.retention)[table];
    const targets = isPartitioned(table)
      ? [...(await this.partitionsOf(this.db, table)).entries()]
          .filter(([, month]) => month === null || monthStart(month) < cutoff)
          .map(([name]) => name)
      : [table];
    let deleted = 0;
    for (const target of targets) {
      if (deleted >= limit) break;
      try {
        const result = await sql`
          DELETE FROM ${sql.table(target)}
          WHERE ctid = ANY(ARRAY(
            SELECT ctid FROM ${sql.table(target)} WHERE ${olderThan(table, cutoff)}
            LIMIT ${limit - deleted}
          ))`.execute(this.db);
        deleted += Number(result.numAffectedRows ?? 0);
      } catch (error) {
        // Another worker dropped this expired month after it was listed: its rows are gone.
        if (target === table || !isUndefinedTable(error)) throw error;
      }
    }
    return deleted;
  }

  /**
   * Takes `table`'s partition lock for this transaction, waiting while another worker's change
   * holds it (then this one finds the month made), at most PARTITION_LOCK_TIMEOUT_MS like every
   * lock wait of the transaction: past it, false (the transaction is then aborted; the next
   * run retries). Waiting, not skipping: two workers skipping each other's months in turn could
   * leave a month to neither.
   */
  private async lockTable(tx: Transaction<Database>, table: PartitionedTable): Promise<boolean> {
    await sql`SELECT set_config('lock_timeout', ${String(PARTITION_LOCK_TIMEOUT_MS)}, true)`.execute(
      tx,
    );
    try {
      await sql`SELECT pg_advisory_xact_lock(
        hashtextextended(${`linkservice.analytics-partitions.${table}`}, 0))`.execute(tx);
      return true;
    } catch (error) {
      if ((error as { code?: string }).code === LOCK_NOT_AVAILABLE) return false;
      throw error;
    }
  }

  /**
   * The attached partitions of `table` (of every partitioned analytics table when omitted), by
   * name, with the month a monthly one holds (null for the DEFAULT or any other).
   */
  private async partitionsOf(
    db: Kysely<Database>,
    table?: PartitionedTable,
  ): Promise<Map<string, Month | null>> {
    const parents = table ? [table] : PARTITIONED_TABLES;
    const result = await sql<{ parent: PartitionedTable; name: string }>`
      SELECT p.relname AS parent, c.relname AS name
      FROM pg_inherits i
      JOIN pg_class c ON c.oid = i.inhrelid
      JOIN pg_class p ON p.oid = i.inhparent
      WHERE i.inhparent = ANY(${parents}::regclass[])
      ORDER BY c.relname`.execute(db);
    return new Map(
      result.rows.map((row) => [row.name, parsePartitionName(row.parent, row.name)] as const),
    );
  }
}
