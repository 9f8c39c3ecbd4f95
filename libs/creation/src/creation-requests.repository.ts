import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { SETTLE_LOCK_TIMEOUT_MS } from './creation-job.contract';

/** What the settle insert found: it abandoned the request, or the worker had committed first. */
export type SettleResult =
  | { kind: 'abandoned' }
  | { kind: 'done'; results: unknown }
  /** Already abandoned earlier (a second settle of the same request). */
  | { kind: 'already_abandoned' };

/**
 * The statements on creation_requests outside a creation transaction: the gateway's settle and
 * the cleanup. The worker writes 'done' in the transaction that creates the links (see
 * CreationTransaction.claim); the gateway writes 'abandoned' when it stops waiting. The primary
 * key makes the two writes exclusive, and whichever comes second learns the first one's outcome.
 */
export class CreationRequestsRepository {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly lockTimeoutMs: number = SETTLE_LOCK_TIMEOUT_MS,
  ) {}

  /**
   * Inserts 'abandoned' unless the request has a row. When the worker's transaction holds the row
   * uncommitted, the insert waits for it (bounded by lock_timeout; the worker's transaction is
   * bounded by the deadline guard, so it ends first) and then reads the committed outcome.
   */
  async abandonOrRead(requestId: string, appId: string): Promise<SettleResult> {
    return this.db.transaction().execute(async (trx) => {
      await sql`SELECT set_config('lock_timeout', ${String(this.lockTimeoutMs)}, true),
                       set_config('statement_timeout', ${String(this.lockTimeoutMs + 1_000)}, true)`.execute(
        trx,
      );
      const inserted = await trx
        .insertInto('creation_requests')
        .values({ id: requestId, app_id: appId, status: 'abandoned', results: null })
        .onConflict((oc) => oc.column('id').doNothing())
        .returning('id')
        .executeTakeFirst();
      if (inserted) return { kind: 'abandoned' };

      // A new statement sees what the transaction we waited for committed (READ COMMITTED).
      const existing = await trx
        .selectFrom('creation_requests')
        .select(['status', 'results'])
        .where('id', '=', requestId)
        .executeTakeFirst();
      if (!existing) throw new Error(`creation request ${requestId} conflicted but has no row`);
      return existing.status === 'done'
        ? { kind: 'done', results: existing.results }
        : { kind: 'already_abandoned' };
    });
  }

  /** Deletes rows older than `olderThanHours`, a bounded slice per call; returns how many. */
  async deleteOlderThan(olderThanHours: number, limit: number): Promise<number> {
    const result = await sql`
      DELETE FROM creation_requests
      WHERE id IN (
        SELECT id FROM creation_requests
        WHERE created_at < now() - make_interval(hours => ${olderThanHours})
        LIMIT ${limit}
      )`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }
}
