import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/**
 * The worker's one statement on installs, the retention delete (the gateway's InstallsRepository
 * writes and erases them).
 */
export class InstallRetentionRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Deletes installs created more than `olderThanDays` ago, the oldest first and at most `limit`
   * of them (installs_created_at_idx); their install_clicks go by ON DELETE CASCADE. Returns how
   * many installs were deleted.
   */
  async deleteOlderThan(olderThanDays: number, limit: number): Promise<number> {
    const result = await sql`
      DELETE FROM installs
      WHERE id IN (
        SELECT id FROM installs
        WHERE created_at < now() - make_interval(days => ${olderThanDays})
        ORDER BY created_at
        LIMIT ${limit}
      )`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }
}
