import { randomBytes } from 'node:crypto';
import { migrateToLatest } from '@linkservice/db';
import { startContainersIfWanted } from './containers';

const LOCAL_DATABASE = 'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_REDIS = 'redis://127.0.0.1:6379';

/**
 * Gives this test run its own database and Redis key prefix so runs never collide. Uses
 * DATABASE_URL / REDIS_URL when set; otherwise testcontainers when Docker is available;
 * otherwise the local defaults.
 */
export async function globalSetupForRun(): Promise<void> {
  const runId = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const containers =
    process.env.DATABASE_URL || process.env.REDIS_URL ? null : await startContainersIfWanted();

  const server = new URL(process.env.DATABASE_URL ?? containers?.databaseUrl ?? LOCAL_DATABASE);
  server.pathname = `/linkservice_test_${runId}`;
  const databaseUrl = server.toString();
  await migrateToLatest(databaseUrl);

  process.env.DATABASE_URL = databaseUrl;
  process.env.REDIS_URL = process.env.REDIS_URL ?? containers?.redisUrl ?? LOCAL_REDIS;
  process.env.REDIS_PREFIX = `lstest-${runId}`;
  process.env.NODE_ENV = 'test';
  process.env.LOG_LEVEL = process.env.TEST_LOG_LEVEL ?? 'silent';
}

module.exports = globalSetupForRun;
