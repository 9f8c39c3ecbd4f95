import { randomBytes } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { createDb, migrateToLatest } from '@linkservice/db';
import { sql } from 'kysely';
import { testEnvironment } from './environment';

/** A pool on the run's database, for a test file's own reads and seeds; close it in afterAll. */
export function testDatabase(max = 2): DbHandle {
  return createDb({ connectionString: testEnvironment().databaseUrl, max });
}

/**
 * A database of the test file's own, migrated, beside the run's. For tests whose rows another
 * file's processes would act on: every worker's webhook relay claims the due deliveries of its
 * whole database, so tests with webhook deliveries keep them apart from every other file's
 * workers (spawned stacks run on the run's database). drop() closes the pool and drops it.
 */
export async function ownDatabase(
  max = 8,
): Promise<DbHandle & { url: string; drop(): Promise<void> }> {
  const url = new URL(testEnvironment().databaseUrl);
  url.pathname = `${url.pathname}_wh_${randomBytes(3).toString('hex')}`;
  await migrateToLatest(url.toString());
  const handle = createDb({ connectionString: url.toString(), max });
  return {
    ...handle,
    url: url.toString(),
    drop: async () => {
      await handle.close();
      const admin = createDb({ connectionString: testEnvironment().databaseUrl, max: 1 });
      const name = decodeURIComponent(url.pathname.slice(1));
      await sql`DROP DATABASE IF EXISTS ${sql.id(name)} WITH (FORCE)`.execute(admin.db);
      await admin.close();
    },
  };
}
