import type { AppRow, Database, NewApp } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

export class AppsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The inserted app, or null when its subdomain key is already taken (one statement, no race). */
  async insertUnlessSubdomainTaken(app: NewApp): Promise<AppRow | null> {
    const row = await this.db
      .insertInto('apps')
      .values(app)
      .onConflict((conflict) => conflict.column('subdomain_key').doNothing())
      .returningAll()
      .executeTakeFirst();
    return row ?? null;
  }

  /** The updated app, or null when no app has this id. updated_at moves only on a change. */
  async updateLinkAllowance(appId: string, allowance: number | null): Promise<AppRow | null> {
    const row = await this.db
      .updateTable('apps')
      .set({
        link_allowance: allowance,
        updated_at: sql<Date>`CASE WHEN link_allowance IS DISTINCT FROM ${allowance}::integer
          THEN now() ELSE updated_at END`,
      })
      .where('id', '=', appId)
      .returningAll()
      .executeTakeFirst();
    return row ?? null;
  }

  async findById(appId: string): Promise<AppRow | null> {
    const row = await this.db
      .selectFrom('apps')
      .selectAll()
      .where('id', '=', appId)
      .executeTakeFirst();
    return row ?? null;
  }
}
