import type { Database, Environment, LinkRow, NewLink } from '@linkservice/db';
import type { ControlledTransaction, Kysely } from 'kysely';
import { sql } from 'kysely';

export interface LockedApp {
  subdomainKey: string;
  linkCount: number;
  linkAllowance: number | null;
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
   * BEGIN, then bound the transaction: every statement, and every pause between statements, ends
   * within `budgetMs` (the job's deadline plus the commit grace), so a stuck or paused worker
   * cannot keep the gateway's settle waiting on its row.
   */
  async begin(budgetMs: number): Promise<CreationTransaction> {
    const trx = await this.db.startTransaction().execute();
    try {
      const ms = String(Math.max(1, Math.ceil(budgetMs)));
      await sql`SELECT set_config('statement_timeout', ${ms}, true),
                       set_config('idle_in_transaction_session_timeout', ${ms}, true)`.execute(trx);
    } catch (error) {
      await trx
        .rollback()
        .execute()
        .catch(() => undefined);
      throw error;
    }
    return new CreationTransaction(trx);
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
  constructor(private readonly trx: ControlledTransaction<Database>) {}

  /**
   * Claims the request as 'done' unless it already has a row or the database clock is past the
   * deadline. A concurrent holder of the same id (a redelivery racing a stalled attempt, or the
   * gateway's settle) makes this wait for its outcome instead of duplicating it.
   */
  async claim(requestId: string, appId: string, deadline: number): Promise<boolean> {
    const claimed = await sql<{ id: string }>`
      INSERT INTO creation_requests (id, app_id, status)
      SELECT ${requestId}, ${appId}, 'done'
      WHERE clock_timestamp() < to_timestamp(${deadline}::float8 / 1000)
      ON CONFLICT (id) DO NOTHING
      RETURNING id`.execute(this.trx);
    return claimed.rows.length === 1;
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

  /**
   * Locks the app row for the rest of the transaction, so creations for one app run one at a
   * time and the allowance check sees every committed link. FOR NO KEY UPDATE, not FOR UPDATE:
   * it still excludes other creations, but not the foreign-key checks of inserts that reference
   * the app (such as the gateway's settle insert), which must never wait on another job.
   */
  async lockApp(appId: string): Promise<LockedApp | undefined> {
    const row = await this.trx
      .selectFrom('apps')
      .select(['subdomain_key', 'link_count', 'link_allowance'])
      .where('id', '=', appId)
      .forNoKeyUpdate()
      .executeTakeFirst();
    return row
      ? {
          subdomainKey: row.subdomain_key,
          linkCount: row.link_count,
          linkAllowance: row.link_allowance,
        }
      : undefined;
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
   * One multi-row insert. Rows whose alias is taken are skipped, not errors: the caller sees
   * which by the rows that come back, and retries only generated aliases.
   */
  async insertLinks(links: NewLink[]): Promise<LinkRow[]> {
    if (links.length === 0) return [];
    return this.trx
      .insertInto('links')
      .values(links)
      .onConflict((oc) => oc.columns(['app_id', 'environment', 'alias']).doNothing())
      .returningAll()
      .execute();
  }

  /**
   * Adds the new links to the app's count and stores the job's results, in one statement that
   * refuses (returns false) once the database clock is past `commitBy`: a transaction that slept
   * past the grace period must roll back, because the gateway may have stopped waiting for it.
   */
  async recordOutcome(
    requestId: string,
    appId: string,
    created: number,
    results: unknown,
    commitBy: number,
  ): Promise<boolean> {
    const stored = await sql<{ id: string }>`
      WITH counted AS (
        UPDATE apps SET link_count = link_count + ${created}
        WHERE id = ${appId} AND ${created} > 0
      )
      UPDATE creation_requests SET results = ${JSON.stringify(results)}::jsonb
      WHERE id = ${requestId}
        AND clock_timestamp() < to_timestamp(${commitBy}::float8 / 1000)
      RETURNING id`.execute(this.trx);
    return stored.rows.length === 1;
  }

  async commit(): Promise<void> {
    try {
      await this.trx.commit().execute();
    } catch (error) {
      // Kysely releases the connection only after a successful COMMIT; rollback always does.
      await this.rollback();
      throw error;
    }
  }

  async rollback(): Promise<void> {
    if (this.trx.isCommitted || this.trx.isRolledBack) return;
    await this.trx
      .rollback()
      .execute()
      .catch(() => undefined);
  }
}
