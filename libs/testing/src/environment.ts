/** Where the per-run test database and Redis namespace live; written by global-setup. */
export interface TestEnvironment {
  databaseUrl: string;
  redisUrl: string;
  redisPrefix: string;
}

/** Read inside a test (or a process it spawns): global-setup exported these variables. */
export function testEnvironment(): TestEnvironment {
  const { DATABASE_URL, REDIS_URL, REDIS_PREFIX } = process.env;
  if (!DATABASE_URL || !REDIS_URL || !REDIS_PREFIX) {
    throw new Error('Run tests through jest (pnpm test): global-setup prepares their database');
  }
  return { databaseUrl: DATABASE_URL, redisUrl: REDIS_URL, redisPrefix: REDIS_PREFIX };
}
