import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { CreateLinksJobResult } from './create-links.job';
import { createLinksResultSchema } from './create-links.job';

/** The app a claimed request creates links for, read from its row under the lock. */
export interface ClaimedApp {
  subdomainKey: string;
  /**
   * Links of the app in both environments, archived ones included: what the plan allowance
   * counts. Read from the locked row, so no creation can have committed a link it misses.
   */
  linkCount: number;
  linkAllowance: number | null;
}

/**
 * What the claim decided. `claimed`: this transaction owns the request and holds the app's lock.
 * `answered`: an earlier delivery or the gateway decided the request; the job answers exactly
 * this and creates nothing.
 */
export type Claim =
  { kind: 'claimed'; app: ClaimedApp } | { kind: 'answered'; answer: CreateLinksJobResult };

/** The job's outcome, stored once its links are inserted, in the same transaction. */
export interface OutcomeRecord {
  requestId: string;
  results: unknown;
  /** Epoch ms: past this (database clock) nothing is stored, and the job must roll back. */
  commitBy: number;
}

/** Opens the worker's creation transactions. */
export class CreationTransactions {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Runs `work` in one transaction on one connection, bounded: every statement, and every pause
   * between statements, ends within `budgetMs` (the job's deadline plus the commit grace), so a
   * stuck or paused worker cannot keep the gateway's settle waiting on its row. `work` ends it
   * with tx.commit(); anything else (including a throw) rolls it back.
   */
  async run<T>(budgetMs: number, work: (tx: CreationTransaction) => Promise<T>): Promise<T> {
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
}

/**
 * One creation job's transaction: the protocol's statements (claim, store the outcome, commit),
 * and `db`, the transaction's connection, on which the worker runs its statements about links.
 */
export class CreationTransaction {
  private state: 'open' | 'committed' | 'rolled_back' = 'open';

  constructor(readonly db: Kysely<Database>) {}

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
   *
   * The link counts are columns of the locked row on purpose. When this statement waits for the
   * lock (READ COMMITTED), Postgres re-reads only the locked row once it is free (EvalPlanQual);
   * a subquery on another table would still see the snapshot from before the wait, miss the
   * links the previous holder just committed, and let concurrent creations exceed the allowance.
   *
   * Not claimed: one more statement reads what decided the request (an earlier delivery's
   * 'done', the gateway's 'abandoned', or no row when the deadline had passed); only
   * redeliveries and late jobs pay for it.
   */
  async claim(requestId: string, appId: string, deadline: number): Promise<Claim> {
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
      SELECT subdomain_key, live_link_count + test_link_count AS link_count, link_allowance
      FROM apps
      WHERE id = ${appId} AND EXISTS (SELECT FROM claimed)
      FOR NO KEY UPDATE OF apps`.execute(this.db);
    const row = rows.at(0);
    if (row) {
      return {
        kind: 'claimed',
        app: {
          subdomainKey: row.subdomain_key,
          linkCount: row.link_count,
          linkAllowance: row.link_allowance,
        },
      };
    }
    return { kind: 'answered', answer: await this.decidedAnswer(requestId) };
  }

  /**
   * Stores the job's outcome (after its links are inserted, in this transaction) while the
   * database clock is before `commitBy`; false once it is past, and then the job must not commit:
   * no creation becomes visible after that moment.
   */
  async recordOutcome(outcome: OutcomeRecord): Promise<boolean> {
    const stored = await storeOutcome(this.db, outcome).execute();
    return stored.length === 1;
  }

  async commit(): Promise<void> {
    if (this.state !== 'open') throw new Error(`commit of a transaction already ${this.state}`);
    // A COMMIT that fails ends the transaction too (Postgres rolls it back), as does a lost
    // connection, which the pool then replaces.
    this.state = 'committed';
    await sql.raw('COMMIT').execute(this.db);
  }

  /** Ends the transaction unless it already ended; never throws (see commit()). */
  async rollback(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'rolled_back';
    await sql
      .raw('ROLLBACK')
      .execute(this.db)
      .catch(() => undefined);
  }

  /** The answer to a request this transaction could not claim. */
  private async decidedAnswer(requestId: string): Promise<CreateLinksJobResult> {
    const row = await this.db
      .selectFrom('creation_requests')
      .select(['status', 'results'])
      .where('id', '=', requestId)
      .executeTakeFirst();
    if (!row) return { status: 'abandoned', reason: 'deadline_passed' };
    if (row.status === 'abandoned') return { status: 'abandoned', reason: 'abandoned_by_gateway' };
    // Committed by an earlier delivery of this job: answer exactly what it answered.
    return { status: 'done', result: createLinksResultSchema.parse(row.results) };
  }
}

/**
 * The UPDATE that stores a job's results while the database clock is before `commitBy`. Returns
 * the row's id: no row means nothing was stored and the job must not commit.
 */
function storeOutcome(db: Kysely<Database>, outcome: OutcomeRecord) {
  return db
    .updateTable('creation_requests')
    .set({ results: JSON.stringify(outcome.results) })
    .where('id', '=', outcome.requestId)
    .where(sql<boolean>`clock_timestamp() < to_timestamp(${outcome.commitBy}::float8 / 1000)`)
    .returning('id');
}
