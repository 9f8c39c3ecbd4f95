import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { CreateLinksJobResult } from './creation-job.contract';
import { createLinksResultSchema } from './creation-job.contract';

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
 * this and creates nothing. `unknown_app`: this database has no such app (apps are never
 * deleted, so the job most likely came from another stack's gateway on the same Redis and
 * prefix); nothing is claimed or created for it.
 */
export type Claim =
  | { kind: 'claimed'; app: ClaimedApp }
  | { kind: 'answered'; answer: CreateLinksJobResult }
  | { kind: 'unknown_app' };

/** One request a group's claim tries to own: its id, its app, and its deadline (epoch ms). */
export interface ClaimRequest {
  requestId: string;
  appId: string;
  deadline: number;
}

/** Whether `error` is Postgres giving up a lock wait at lock_timeout (lock_not_available). */
export function isLockTimeout(error: unknown): boolean {
  return (
    typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '55P03'
  );
}

/** Opens the worker's creation transactions. */
export class CreationTransactions {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Runs `work` in one transaction on one connection, bounded (`lockTimeoutMs`: each wait for a
   * lock too, failing with SQLSTATE 55P03 past it; see isLockTimeout): every statement, and every pause
   * between statements, ends within `budgetMs` (the job's deadline plus the commit grace), so a
   * stuck or paused worker cannot keep the gateway's settle waiting on its row. `work` ends it
   * with tx.commit(); anything else (including a throw) rolls it back.
   */
  async run<T>(
    budgetMs: number,
    work: (tx: CreationTransaction) => Promise<T>,
    { lockTimeoutMs }: { lockTimeoutMs?: number } = {},
  ): Promise<T> {
    const ms = Math.max(1, Math.ceil(budgetMs));
    if (!Number.isSafeInteger(ms)) throw new RangeError(`transaction budget ${budgetMs} ms`);
    const lockMs = lockTimeoutMs === undefined ? undefined : Math.max(1, Math.ceil(lockTimeoutMs));
    if (lockMs !== undefined && !Number.isSafeInteger(lockMs)) {
      throw new RangeError(`lock timeout ${lockTimeoutMs} ms`);
    }
    return this.db.connection().execute(async (connection) => {
      const tx = new CreationTransaction(connection);
      try {
        // BEGIN and the bounds in one round trip: a simple query (no parameters) may hold several
        // statements, and SET takes no parameters anyway; `ms` is a checked integer.
        await sql
          .raw(
            `BEGIN; SET LOCAL statement_timeout = ${ms}; ` +
              `SET LOCAL idle_in_transaction_session_timeout = ${ms}` +
              (lockMs === undefined ? '' : `; SET LOCAL lock_timeout = ${lockMs}`),
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
   * Claims each request as 'done' unless it already has a row or the database clock is past its
   * deadline, and locks the apps of the claimed ones for the rest of the transaction, in one
   * statement; returns each request's claim, by id. A concurrent holder of the same id (a
   * redelivery racing a stalled attempt, or the gateway's settle) makes the claim wait for its
   * outcome instead of duplicating it. Requests are inserted in the group's order, so two
   * deliveries of one group wait on each other's rows in the same order and never deadlock.
   *
   * The lock serialises the creations of one app, so the allowance check sees every committed
   * link. The apps are locked in id order: two groups sharing apps take them in the same order,
   * so they wait for each other instead of deadlocking. FOR NO KEY UPDATE, not FOR UPDATE: it
   * still excludes other creations, but not the foreign-key checks of inserts that reference the
   * app (such as the gateway's settle insert), which must never wait on another job.
   *
   * The link counts are columns of the locked rows on purpose. When this statement waits for a
   * lock (READ COMMITTED), Postgres re-reads only the locked row once it is free (EvalPlanQual);
   * a subquery on another table would still see the snapshot from before the wait, miss the
   * links the previous holder just committed, and let concurrent creations exceed the allowance.
   *
   * Not claimed: one more statement reads what decided those requests (an earlier delivery's
   * 'done', the gateway's 'abandoned', or no row when the deadline had passed); only
   * redeliveries and late requests pay for it.
   */
  async claimAll(requests: readonly ClaimRequest[]): Promise<Map<string, Claim>> {
    const { rows } = await sql<{
      id: string;
      subdomain_key: string;
      link_count: number;
      link_allowance: number | null;
      claimed_ids: string[];
    }>`
      WITH wanted AS (
        SELECT * FROM unnest(
          ${requests.map((request) => request.requestId)}::text[],
          ${requests.map((request) => request.appId)}::text[],
          ${requests.map((request) => request.deadline)}::float8[]
        ) WITH ORDINALITY AS wanted(id, app_id, deadline, position)
      ), claimed AS (
        INSERT INTO creation_requests (id, app_id, status)
        SELECT id, app_id, 'done' FROM wanted
        WHERE clock_timestamp() < to_timestamp(deadline / 1000)
          -- An unknown app is a claim refused, not a foreign-key error that aborts the group.
          AND EXISTS (SELECT 1 FROM apps WHERE apps.id = wanted.app_id)
        ORDER BY position
        ON CONFLICT (id) DO NOTHING
        RETURNING id, app_id
      )
      SELECT id, subdomain_key, live_link_count + test_link_count AS link_count, link_allowance,
             (SELECT array_agg(id) FROM claimed) AS claimed_ids
      FROM apps
      WHERE id IN (SELECT app_id FROM claimed)
      ORDER BY id
      FOR NO KEY UPDATE OF apps`.execute(this.db);
    const apps = new Map(
      rows.map((row) => [
        row.id,
        {
          subdomainKey: row.subdomain_key,
          linkCount: row.link_count,
          linkAllowance: row.link_allowance,
        },
      ]),
    );
    const claimedIds = new Set(rows.at(0)?.claimed_ids ?? []);
    const claims = new Map<string, Claim>();
    const unclaimed: ClaimRequest[] = [];
    for (const request of requests) {
      const app = claimedIds.has(request.requestId) ? apps.get(request.appId) : undefined;
      if (app) claims.set(request.requestId, { kind: 'claimed', app });
      else unclaimed.push(request);
    }
    if (unclaimed.length > 0) {
      for (const [requestId, claim] of await this.unclaimedDecisions(unclaimed)) {
        claims.set(requestId, claim);
      }
    }
    return claims;
  }

  /**
   * Stores every claimed request's outcome (after their links are inserted, in this transaction)
   * in one statement while the database clock is before `commitBy`; false once it is past (or a
   * row is missing), and then the job must not commit: no creation becomes visible after that
   * moment.
   */
  async recordOutcomes(outcomes: ReadonlyMap<string, unknown>, commitBy: number): Promise<boolean> {
    const stored = await sql<{ id: string }>`
      UPDATE creation_requests SET results = outcome.results
      FROM jsonb_each(${JSON.stringify(Object.fromEntries(outcomes))}::jsonb)
        AS outcome(id, results)
      WHERE creation_requests.id = outcome.id
        AND clock_timestamp() < to_timestamp(${commitBy}::float8 / 1000)
      RETURNING creation_requests.id`.execute(this.db);
    return stored.rows.length === outcomes.size;
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

  /**
   * What decided the requests this transaction could not claim, by id: their rows (an earlier
   * delivery's 'done', the gateway's 'abandoned'), else a missing app, else the deadline.
   */
  private async unclaimedDecisions(
    requests: readonly ClaimRequest[],
  ): Promise<Map<string, Exclude<Claim, { kind: 'claimed' }>>> {
    const { rows } = await sql<{
      id: string;
      status: 'done' | 'abandoned' | null;
      results: unknown;
      app_known: boolean;
    }>`
      SELECT wanted.id, creation_requests.status, creation_requests.results,
             EXISTS (SELECT 1 FROM apps WHERE apps.id = wanted.app_id) AS app_known
      FROM unnest(
        ${requests.map((request) => request.requestId)}::text[],
        ${requests.map((request) => request.appId)}::text[]
      ) AS wanted(id, app_id)
      LEFT JOIN creation_requests USING (id)`.execute(this.db);
    return new Map(
      rows.map((row): [string, Exclude<Claim, { kind: 'claimed' }>] => {
        if (row.status === 'done') {
          // Committed by an earlier delivery of this job: answer exactly what it answered.
          const result = createLinksResultSchema.parse(row.results);
          return [row.id, { kind: 'answered', answer: { status: 'done', result } }];
        }
        if (row.status === 'abandoned') {
          const answer = { status: 'abandoned', reason: 'abandoned_by_gateway' } as const;
          return [row.id, { kind: 'answered', answer }];
        }
        if (!row.app_known) return [row.id, { kind: 'unknown_app' }];
        const answer = { status: 'abandoned', reason: 'deadline_passed' } as const;
        return [row.id, { kind: 'answered', answer }];
      }),
    );
  }
}
