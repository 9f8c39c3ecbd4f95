import type { DbHandle } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import { testEnvironment } from './environment';

/** A pool on the run's database, for a test file's own reads and seeds; close it in afterAll. */
export function testDatabase(max = 2): DbHandle {
  return createDb({ connectionString: testEnvironment().databaseUrl, max });
}
