/** Where the per-run test database and Redis namespace live; written by global-setup. */
export interface TestEnvironment {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
}

/** Set while a run's database exists: the integration and e2e projects share one setup. */
export const RUN_MARKER = 'LINKSERVICE_TEST_RUN';

/** Read inside a test (or a process it spawns): global-setup exported these variables. */
export function testEnvironment(): TestEnvironment {
  const { DATABASE_URL, REDIS_URL, REDIS_PREFIX } = process.env;
  if (!DATABASE_URL || !REDIS_URL || !REDIS_PREFIX) {
    throw new Error(
      'Only integration and e2e tests (pnpm test:integration, pnpm test:e2e) get a database: ' +
        'global-setup prepares it, and unit tests have none',
    );
  }
  return { databaseUrl: DATABASE_URL, redisUrl: REDIS_URL, redisPrefix: REDIS_PREFIX };
}
