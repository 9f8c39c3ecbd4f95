import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/**
 * click_tokens as the worker sees them: rows to delete once expired. The link host's click
 * flush inserts them and the gateway's install matching reads them; an expired token matches
 * nothing, so deleting it changes no answer, it only stops keeping the click.
 */
export class ClickTokensRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Deletes expired tokens, at most `limit` (found through the expires_at index); returns how
   * many. SKIP LOCKED: a token an install is matching right now is left for the next slice, and
   * replicas running the same cleanup split the rows instead of queueing on them.
   */
  async deleteExpired(limit: number): Promise<number> {
    const result = await this.db
      .deleteFrom('click_tokens')
      .where('token_hash', 'in', (eb) =>
        eb
          .selectFrom('click_tokens')
          .select('token_hash')
          .where('expires_at', '<', sql<Date>`now()`)
          .limit(limit)
          .forUpdate()
          .skipLocked(),
      )
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
