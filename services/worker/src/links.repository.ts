import type { StoredLink } from '@linkservice/contracts';
import { STORED_LINK_COLUMNS } from '@linkservice/contracts';
import type { Database, Environment, NewLink } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

export interface LockedApp {
  subdomainKey: string;
  linkCount: number;
  linkAllowance: number | null;
}

/** The job's outcome, stored once its last links are inserted. */
export interface OutcomeRecord {
  requestId: string;
  appId: string;
  results: unknown;
  /** Epoch ms: past this (database clock) nothing is stored, and the job must roll back. */
  commitBy: number;
}

export type ExistingRequest =
  | { status: 'done'; results: unknown }
  | { status: 'abandoned' }
  /** No row: the claim found the deadline already past. */
  | undefined;

/** Opens creation transactions; the only Kysely user of the worker besides the cleanup. */
export class LinksRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Runs `work` in one transaction on one connection, bounded: every statement, and every pause
   * between statements, ends within `budgetMs` (the job's deadline plus the commit grace), so a
   * stuck or paused worker cannot keep the gateway's settle waiting on its row. `work` ends it
   * with tx.commit(); anything else (including a throw) rolls it back.
   */
  async transaction<T>(
    budgetMs: number,
    work: (tx: CreationTransaction) => Promise<T>,
  ): Promise<T> {
    const ms = Math.max(1, Math.ceil(budgetMs));
    if (!Number.isSafeInteger(ms)) throw new RangeError(`transaction budget ${budgetMs} ms`);
    return this.db.connection().execute(async (connection) => {
      const tx = new CreationTransaction(connection);
      try {
        // BEGIN and the bounds in one round trip: a simple query (no parameters) may hold several
        // statements, and SET takes no parameters anyway; `ms` is a checked integer.
        await sql
          .raw(
            `BEGIN; SET LOCAL statement_timeout = ${ms}; ` +
              `SET LOCAL idle_in_transaction_session_timeout = ${ms}`,
          )
          .execute(connection);
        const result = await work(tx);
        await tx.rollback();
        return result;
      } catch (error) {
        await tx.rollback();
        throw error;
      }
    });
  }

  /** Deletes bookkeeping rows older than `olderThanHours`, a bounded slice per call. */
  async deleteOldCreationRequests(olderThanHours: number, limit: number): Promise<number> {
    const result = await sql`
      DELETE FROM creation_requests
      WHERE id IN (
        SELECT id FROM creation_requests
        WHERE created_at < now() - make_interval(hours => ${olderThanHours})
        LIMIT ${limit}
      )`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }

  async ping(): Promise<void> {
    await sql`SELECT 1`.execute(this.db);
  }
}

/** One creation job's transaction: a handful of set-based statements, whatever the batch size. */
export class CreationTransaction {
  private state: 'open' | 'committed' | 'rolled_back' = 'open';

  constructor(private readonly trx: Kysely<Database>) {}

  /**
   * Claims the request as 'done' unless it already has a row or the database clock is past the
   * deadline, and once claimed locks the app row for the rest of the transaction, in one
   * statement. A concurrent holder of the same id (a redelivery racing a stalled attempt, or the
   * gateway's settle) makes the claim wait for its outcome instead of duplicating it.
   *
   * The lock serialises the creations of one app, so the allowance check sees every committed
   * link. FOR NO KEY UPDATE, not FOR UPDATE: it still excludes other creations, but not the
   * foreign-key checks of inserts that reference the app (such as the gateway's settle insert),
   * which must never wait on another job. The EXISTS makes the claim run first (an uncorrelated
   * subquery is evaluated once, before the scan), so an unclaimed request locks nothing.
   * Returns the locked app, or undefined when nothing was claimed.
   */
  async claimAndLockApp(
    requestId: string,
    appId: string,
    deadline: number,
  ): Promise<LockedApp | undefined> {
    const { rows } = await sql<{
      subdomain_key: string;
      link_count: number;
      link_allowance: number | null;
    }>`
      WITH claimed AS (
        INSERT INTO creation_requests (id, app_id, status)
        SELECT ${requestId}, ${appId}, 'done'
        WHERE clock_timestamp() < to_timestamp(${deadline}::float8 / 1000)
        ON CONFLICT (id) DO NOTHING
        RETURNING id
      )
      SELECT subdomain_key, link_count, link_allowance
      FROM apps
      WHERE id = ${appId} AND EXISTS (SELECT FROM claimed)
      FOR NO KEY UPDATE OF apps`.execute(this.trx);
    const row = rows.at(0);
    return row
      ? {
          subdomainKey: row.subdomain_key,
          linkCount: row.link_count,
          linkAllowance: row.link_allowance,
        }
      : undefined;
  }

  async findRequest(requestId: string): Promise<ExistingRequest> {
    const row = await this.trx
      .selectFrom('creation_requests')
      .select(['status', 'results'])
      .where('id', '=', requestId)
      .executeTakeFirst();
    if (!row) return undefined;
    return row.status === 'done'
      ? { status: 'done', results: row.results }
      : { status: 'abandoned' };
  }

  /** Which of `aliases` exist in the app and environment, archived links included. */
  async takenAliases(
    appId: string,
    environment: Environment,
    aliases: readonly string[],
  ): Promise<Set<string>> {
    if (aliases.length === 0) return new Set();
    const rows = await this.trx
      .selectFrom('links')
      .select('alias')
      .where('app_id', '=', appId)
      .where('environment', '=', environment)
      .where('alias', '=', sql<string>`ANY(${sql.val(aliases)}::text[])`)
      .execute();
    return new Set(rows.map((row) => row.alias));
  }

  /**
   * Inserts the links and raises the app's link count by the rows inserted, in one statement, and
   * returns the rows as stored (column defaults, jsonb's key order). A row whose alias is taken is
   * skipped, not an error: the caller sees which by the rows that come back and retries only
   * generated aliases. (A data-modifying CTE runs to completion whether or not the SELECT reads it.)
   */
  async insertLinks(appId: string, links: NewLink[]): Promise<StoredLink[]> {
    if (links.length === 0) throw new Error('insertLinks needs at least one link');
    return this.trx
      .with('inserted', (db) =>
        db
          .insertInto('links')
          .values(links)
          .onConflict((oc) => oc.columns(['app_id', 'environment', 'alias']).doNothing())
          .returning(STORED_LINK_COLUMNS),
      )
      .with('counted', (db) =>
        db
          .updateTable('apps')
          .set({ link_count: sql`link_count + (SELECT count(*) FROM inserted)` })
          .where('id', '=', appId),
      )
      .selectFrom('inserted')
      .selectAll()
      .execute();
  }

  /**
   * Stores the job's outcome while the database clock is before `commitBy`; false once it is
   * past, and then the transaction must roll back.
   */
  async recordOutcome(outcome: OutcomeRecord): Promise<boolean> {
    const stored = await storeOutcome(this.trx, outcome).execute();
    return stored.length === 1;
  }

  async commit(): Promise<void> {
    if (this.state !== 'open') throw new Error(`commit of a transaction already ${this.state}`);
    // A COMMIT that fails ends the transaction too (Postgres rolls it back), as does a lost
    // connection, which the pool then replaces.
    this.state = 'committed';
    await sql.raw('COMMIT').execute(this.trx);
  }

  /** Ends the transaction unless it already ended; never throws (see commit()). */
  async rollback(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'rolled_back';
    await sql
      .raw('ROLLBACK')
      .execute(this.trx)
      .catch(() => undefined);
  }
}

/** The UPDATE that stores a job's results while the database clock is before `commitBy`. */
function storeOutcome(db: Kysely<Database>, outcome: OutcomeRecord) {
  return db
    .updateTable('creation_requests')
    .set({ results: JSON.stringify(outcome.results) })
    .where('id', '=', outcome.requestId)
    .where(sql<boolean>`clock_timestamp() < to_timestamp(${outcome.commitBy}::float8 / 1000)`)
    .returning('id');
}
