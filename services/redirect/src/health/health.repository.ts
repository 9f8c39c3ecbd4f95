import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { Database } from '@linkservice/db';

/** A round trip that needs nothing but a working connection. */
export async function pingDatabase(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}
