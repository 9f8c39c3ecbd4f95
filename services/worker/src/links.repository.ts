import type { CreationTransaction, OutcomeRecord } from '@linkservice/creation';
import { storeOutcome } from '@linkservice/creation';
import type { Database, Environment, NewLink } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/** What an insertion round did: which aliases it inserted, and whether the outcome was stored. */
export interface InsertedRound {
  inserted: Set<string>;
  recorded: boolean;
}

/**
 * The worker's statements about links. They run inside a creation transaction (its claim holds
 * the app's lock), on the transaction's connection; the protocol's own statements live in
 * @linkservice/creation.
 */
export class LinksRepository {
  constructor(private readonly db: Kysely<Database>) {}

  async ping(): Promise<void> {
    await sql`SELECT 1`.execute(this.db);
  }

  /** Which of `aliases` exist in the app and environment, archived links included. */
  async takenAliases(
    tx: CreationTransaction,
    appId: string,
    environment: Environment,
    aliases: readonly string[],
  ): Promise<Set<string>> {
    if (aliases.length === 0) return new Set();
    const rows = await tx.db
      .selectFrom('links')
      .select('alias')
      .where('app_id', '=', appId)
      .where('environment', '=', environment)
      .where('alias', '=', sql<string>`ANY(${sql.val(aliases)}::text[])`)
      .execute();
    return new Set(rows.map((row) => row.alias));
  }

  /**
   * One statement: a multi-row insert, and `outcome` stored when it inserted every row and the
   * database clock is before `outcome.commitBy`. Rows whose alias is taken are skipped, not
   * errors: the caller sees which by the aliases that come back, retries only generated aliases,
   * and stores the outcome with the last round. The app's link counts follow by the trigger on
   * links (see the app-link-counts migration). (Data-modifying CTEs all run to completion whether
   * or not the SELECT reads them.)
   */
  async insertLinksRecording(
    tx: CreationTransaction,
    links: NewLink[],
    outcome: OutcomeRecord,
  ): Promise<InsertedRound> {
    if (links.length === 0) throw new Error('insertLinksRecording needs at least one link');
    const rows = await tx.db
      .with('inserted', (db) =>
        db
          .insertInto('links')
          .values(links)
          .onConflict((oc) => oc.columns(['app_id', 'environment', 'alias']).doNothing())
          .returning('alias'),
      )
      // Built on the transaction: storeOutcome does not take the CTE's own query creator, whose
      // table type also names the earlier CTEs. The SQL is the same.
      .with('recorded', () =>
        storeOutcome(tx.db, outcome).where(
          sql<boolean>`(SELECT count(*) FROM inserted) = ${links.length}`,
        ),
      )
      .selectNoFrom([
        sql<string[]>`ARRAY(SELECT alias FROM inserted)`.as('inserted'),
        sql<boolean>`EXISTS (SELECT FROM recorded)`.as('recorded'),
      ])
      .execute();
    const row = rows.at(0);
    if (!row) throw new Error('the insert statement returned no row');
    return { inserted: new Set(row.inserted), recorded: row.recorded };
  }
}
