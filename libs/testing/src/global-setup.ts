import { randomBytes } from 'node:crypto';
import { migrateToLatest } from '@linkservice/db';
import { generateReceiptSigningKey } from '@linkservice/keys';
import { startContainersIfWanted } from './containers';
import { RUN_MARKER } from './environment';

const LOCAL_DATABASE = 'postgres://postgres@127.0.0.1:5432/postgres';
const LOCAL_REDIS = 'redis://127.0.0.1:6379';

/**
 * Gives this test run its own database and Redis key prefix so runs never collide. Uses
 * DATABASE_URL / REDIS_URL when set; otherwise testcontainers when Docker is available;
 * otherwise the local defaults. Every jest project that needs them names this setup, and jest
 * runs each one's in the same process: only the first prepares anything.
 */
export async function globalSetupForRun(): Promise<void> {
  if (process.env[RUN_MARKER]) return;
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
  // The gateway requires one; every service a test starts in-process or spawns gets this one.
  process.env.RECEIPT_SIGNING_KEY ??= generateReceiptSigningKey();
  // One key for every gateway and worker of the run: they must share it (see webhook-env.ts).
  process.env.WEBHOOK_ENCRYPTION_KEY ??= randomBytes(32).toString('base64');
  process.env.NODE_ENV = 'test';
  process.env.LOG_LEVEL = process.env.TEST_LOG_LEVEL ?? 'silent';
  process.env[RUN_MARKER] = runId;
}

module.exports = globalSetupForRun;
