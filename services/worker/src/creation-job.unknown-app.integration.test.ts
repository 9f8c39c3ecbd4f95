import { randomBytes } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { createDb, migrateToLatest } from '@linkservice/db';
import { BullCreationClient, CreationRequestsRepository } from '@linkservice/creation';
import { createLogger } from '@linkservice/logger';
import type { Tenant } from '@linkservice/testing';
import {
  createTenant,
  linkDraft,
  linksOf,
  testDatabase,
  testEnvironment,
} from '@linkservice/testing';
import { sql } from 'kysely';
import { creation, requestRow } from './testing/creation-harness';
import { InProcessWorkers } from './testing/in-process-workers';
import { loggerToLines } from './testing/log-lines';

/**
 * Two stacks on one Redis and REDIS_PREFIX, each with its own database: this stack's worker
 * takes a job the other stack's gateway added, for an app only the other database has.
 */
const env = testEnvironment();
const otherDatabaseUrl = (() => {
  const url = new URL(env.databaseUrl);
  url.pathname = `${url.pathname}_other_${randomBytes(3).toString('hex')}`;
  return url.toString();
})();
const prefix = `${env.redisPrefix}-shared-${randomBytes(3).toString('hex')}`;
const TIMEOUT_MS = 20_000;

let gatewayDb: DbHandle;
let workerDb: DbHandle;
let workers: InProcessWorkers;
let gateway: BullCreationClient;
let tenant: Tenant;
const workerLogs = loggerToLines();
const failedAttempts: Record<string, unknown>[] = [];

beforeAll(async () => {
  await migrateToLatest(otherDatabaseUrl);
  gatewayDb = testDatabase(4);
  workerDb = createDb({ connectionString: otherDatabaseUrl, max: 4 });
  tenant = await createTenant(gatewayDb.db);
  workers = new InProcessWorkers({
    db: workerDb.db,
    redisUrl: env.redisUrl,
    prefix,
    logger: workerLogs.logger,
    linkDomain: 'links.test',
  });
  const worker = workers.start();
  // Every failed attempt, as the Worker reports it (the gateway removes the job once settled).
  worker.on('failed', (job, error) => {
    failedAttempts.push({
      jobId: job?.id,
      attemptsMade: job?.attemptsMade,
      attempts: job?.opts.attempts,
      finishedOn: job?.finishedOn,
      reason: error.message,
    });
  });
  await worker.waitUntilReady();
  gateway = new BullCreationClient({
    redis: { REDIS_URL: env.redisUrl },
    prefix,
    requests: new CreationRequestsRepository(gatewayDb.db),
    logger: createLogger('gateway-test', 'silent'),
  });
  await gateway.waitUntilReady();
});

afterAll(async () => {
  await gateway.close();
  await workers.stop();
  await workerDb.close();
  // Outside any transaction, as DROP DATABASE must be; the pool is on another database.
  const name = decodeURIComponent(new URL(otherDatabaseUrl).pathname.slice(1));
  await sql`DROP DATABASE IF EXISTS ${sql.id(name)}`.execute(gatewayDb.db);
  await gatewayDb.close();
});

describe('a creation job for an app this database does not have', () => {
  it('fails once without retries, logs the likely cause, and the gateway answers at once', async () => {
    const payload = creation(tenant, [linkDraft()]);
    const started = Date.now();
    const outcome = await gateway.submit(payload, TIMEOUT_MS);

    // The gateway settled on the failed event, long before its deadline: nothing was created.
    expect(outcome).toEqual({ kind: 'unavailable', reason: 'worker_failed' });
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS / 2);
    expect(await requestRow(gatewayDb.db, payload.requestId)).toMatchObject({
      status: 'abandoned',
    });
    expect(await linksOf(gatewayDb.db, tenant.appId)).toEqual([]);

    // One attempt of the three the gateway allows, and the job failed for good (finishedOn is
    // set only when BullMQ does not retry).
    expect(failedAttempts).toEqual([
      {
        jobId: payload.requestId,
        attemptsMade: 1,
        attempts: 3,
        finishedOn: expect.any(Number),
        reason: expect.stringContaining(`no app ${tenant.appId} in this database`),
      },
    ]);

    // One line, naming the cause; neither the generic failure lines nor a retry's.
    const errors = workerLogs.lines.filter((line) => line.level !== 'info');
    expect(errors).toEqual([
      expect.objectContaining({
        level: 'error',
        jobId: payload.requestId,
        appIds: [tenant.appId],
        requestIds: [payload.requestId],
        redisPrefix: prefix,
        msg: expect.stringContaining(
          'another stack with its own database shares this Redis and REDIS_PREFIX',
        ),
      }),
    ]);
    // The worker's database got nothing either.
    expect(await requestRow(workerDb.db, payload.requestId)).toBeUndefined();
  });
});
