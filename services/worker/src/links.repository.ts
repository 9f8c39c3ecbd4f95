import type { StoredLink } from '@linkservice/contracts';
import { STORED_LINK_COLUMNS } from '@linkservice/contracts';
import type { CreationTransaction } from '@linkservice/creation';
import type { Environment, NewLink } from '@linkservice/db';
import { sql } from 'kysely';

/**
 * The worker's statements about links. They run inside a creation transaction (its claim holds
 * the app's lock), on the transaction's connection; the protocol's own statements live in
 * @linkservice/creation.
 */
export class LinksRepository {
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
   * One multi-row insert that returns the rows as stored (column defaults, jsonb's key order).
   * A row whose alias is taken is skipped, not an error: the caller sees which by the rows that
   * come back and retries only generated aliases. The app's link counts follow by the trigger on
   * links (see the app-link-counts migration).
   */
  async insertLinks(tx: CreationTransaction, links: NewLink[]): Promise<StoredLink[]> {
    if (links.length === 0) throw new Error('insertLinks needs at least one link');
    return tx.db
      .insertInto('links')
      .values(links)
      .onConflict((oc) => oc.columns(['app_id', 'environment', 'alias']).doNothing())
      .returning(STORED_LINK_COLUMNS)
      .execute();
  }
}
