import { LINK_DRAFT_DEFAULTS } from '@linkservice/contracts';
import type { DbHandle } from '@linkservice/db';
import { createLogger } from '@linkservice/logger';
import type { CreateLinksPayload, CreationOutcome } from '@linkservice/creation';
import { BullCreationClient, CreationRequestsRepository } from '@linkservice/creation';
import { eventually, testDatabase, testEnvironment } from '@linkservice/testing';
import type { Stack } from '../support/stack';
import { startRunStack } from '../support/stack';
import type { Tenant } from '../support/tenants';
import { createTenant } from '../support/tenants';

/**
 * The real compiled worker is SIGKILLed in the middle of creation transactions, several times,
 * while batches arrive through the real CreationClient. Afterwards every answer must match the
 * database exactly: each reported link exists once, no link exists that no answer reports, and
 * an `unavailable` answer left nothing behind.
 */

const ROUNDS = 4;
const APPS = 6;
/**
 * Two batches fill a group job (MAX_GROUP_ENTRIES), so a round's six batches travel as three
 * jobs: with the worker taking two at a time, one of them waits in Redis through each kill.
 */
const ENTRIES_PER_BATCH = 40;
const SUBMIT_TIMEOUT_MS = 5_000;
/** Test-only pause inside each creation transaction, so kills land mid-batch. */
const WORKER_DELAY_MS = 300;

jest.setTimeout(120_000);

let postgres: DbHandle;
let stack: Stack;
let client: BullCreationClient;
let apps: Tenant[];

beforeAll(async () => {
  const env = testEnvironment();
  postgres = testDatabase(4);
  stack = await startRunStack({
    services: ['worker'],
    serviceEnv: {
      // Two at a time: some jobs are mid-transaction at each kill, others still wait in Redis
      // and are done by the restarted worker within their timeout.
      worker: { WORKER_TEST_DELAY_MS: String(WORKER_DELAY_MS), WORKER_CONCURRENCY: '2' },
    },
  });
  client = new BullCreationClient({
    redis: { REDIS_URL: env.redisUrl },
    prefix: stack.redisPrefix,
    requests: new CreationRequestsRepository(postgres.db),
    logger: createLogger('worker-crash-test', process.env.LOG_LEVEL ?? 'silent'),
  });
  // One app per batch of a round: jobs of different apps run concurrently in the worker.
  apps = await Promise.all(Array.from({ length: APPS }, () => createTenant(postgres.db)));
});

afterAll(async () => {
  await client.close();
  await stack.stop();
  await postgres.close();
});

function batchFor(app: Tenant, round: number, slot: number): Omit<CreateLinksPayload, 'deadline'> {
  return {
    requestId: `crt_crash_${round}_${slot}_${app.appId}`,
    appId: app.appId,
    environment: slot % 2 === 0 ? 'live' : 'test',
    entries: Array.from({ length: ENTRIES_PER_BATCH }, (_, index) => ({
      index,
      draft: {
        ...LINK_DRAFT_DEFAULTS,
        // Half caller aliases (checkable by name), half generated.
        alias: index % 2 === 0 ? `r${round}-s${slot}-e${index}` : null,
        webFallbackUrl: `https://example.com/${round}/${slot}/${index}`,
        deepLinkData: { round, slot, index },
        title: `round ${round} slot ${slot} entry ${index}`,
        tags: ['crash-test'],
      },
    })),
    creationBudget: ENTRIES_PER_BATCH,
  };
}

/** Open creation transactions of worker processes on this database (idle inside the pause). */
async function openWorkerTransactions(): Promise<number> {
  const { rows } = await postgres.pool.query<{ open: number }>(
    `SELECT count(*)::int AS open FROM pg_stat_activity
     WHERE datname = current_database() AND application_name = 'linkservice-worker'
       AND state IN ('idle in transaction', 'active') AND xact_start IS NOT NULL
       AND backend_xid IS NOT NULL`,
  );
  return rows[0]?.open ?? 0;
}

/** Whether a worker transaction opened in time; a round whose jobs all ended unseen says false. */
async function untilTransactionOpen(timeoutMs: number): Promise<boolean> {
  return eventually(async () => (await openWorkerTransactions()) > 0, {
    timeoutMs,
    intervalMs: 10,
  }).then(
    () => true,
    () => false,
  );
}

interface Answer {
  payload: Omit<CreateLinksPayload, 'deadline'>;
  outcome: CreationOutcome;
}

it('never reports a link that does not exist, nor leaves one that no answer reports', async () => {
  const answers: Answer[] = [];
  let midTransactionKills = 0;

  for (let round = 0; round < ROUNDS; round++) {
    const payloads = apps.map((app, slot) => batchFor(app, round, slot));
    const inFlight = Promise.all(
      payloads.map(async (payload) => ({
        payload,
        outcome: await client.submit(payload, SUBMIT_TIMEOUT_MS),
      })),
    );
    // Kill as soon as a creation transaction holds claimed, uncommitted work.
    if (await untilTransactionOpen(SUBMIT_TIMEOUT_MS)) midTransactionKills++;
    stack.worker.kill('SIGKILL');
    await stack.worker.waitForExit();
    await stack.worker.start();
    answers.push(...(await inFlight));
  }
  // A graceful stop finishes whatever the last incarnation still runs.
  await stack.worker.stop();

  expect(midTransactionKills).toBeGreaterThanOrEqual(ROUNDS - 1);
  const completed = answers.filter((a) => a.outcome.kind === 'completed');
  const unavailable = answers.filter((a) => a.outcome.kind === 'unavailable');
  expect(answers).toHaveLength(ROUNDS * APPS);
  // Both outcomes happened: killed transactions and jobs finished by a restarted worker.
  expect(unavailable.length).toBeGreaterThan(0);
  expect(completed.length).toBeGreaterThan(0);

  // Every request is settled in Postgres, the same way it was answered. A settled request can
  // never create anything later, so the database below is final.
  const requestIds = answers.map((a) => a.payload.requestId);
  const rows = await postgres.db
    .selectFrom('creation_requests')
    .select(['id', 'status', 'results'])
    .where('id', 'in', requestIds)
    .execute();
  const rowById = new Map(rows.map((row) => [row.id, row]));
  for (const { payload, outcome } of answers) {
    const row = rowById.get(payload.requestId);
    expect(row).toBeDefined();
    if (outcome.kind === 'completed') {
      expect(row?.status).toBe('done');
      expect(row?.results).toEqual(outcome.result);
    } else {
      expect(row?.status).toBe('abandoned');
    }
  }

  // Links in the database are exactly the links the answers report, each once.
  const reported = completed.flatMap(({ outcome }) =>
    outcome.kind === 'completed'
      ? outcome.result.results.flatMap((entry) => (entry.ok ? [entry.link] : []))
      : [],
  );
  const stored = await postgres.db
    .selectFrom('links')
    .select(['id', 'app_id', 'environment', 'alias'])
    .where(
      'app_id',
      'in',
      apps.map((app) => app.appId),
    )
    .execute();
  expect(new Set(reported.map((link) => link.id)).size).toBe(reported.length);
  expect(stored.map((row) => row.id).sort()).toEqual(reported.map((link) => link.id).sort());
  const storedById = new Map(stored.map((row) => [row.id, row]));
  for (const link of reported) {
    expect(storedById.get(link.id)).toMatchObject({
      alias: link.alias,
      environment: link.environment,
    });
  }

  // Nothing of an unavailable answer exists, checked by its caller aliases too.
  for (const { payload } of unavailable) {
    const aliases = payload.entries.flatMap(({ draft }) => draft.alias ?? []);
    const found = await postgres.db
      .selectFrom('links')
      .select('alias')
      .where('app_id', '=', payload.appId)
      .where('alias', 'in', aliases)
      .execute();
    expect(found).toEqual([]);
  }

  // The link counters moved with the links and nothing else.
  const appIds = apps.map((app) => app.appId);
  const counts = await postgres.db
    .selectFrom('apps')
    .select(['id', 'live_link_count', 'test_link_count'])
    .where('id', 'in', appIds)
    .execute();
  for (const { id, live_link_count, test_link_count } of counts) {
    const own = stored.filter((row) => row.app_id === id);
    expect({ live: live_link_count, test: test_link_count }).toEqual({
      live: own.filter((row) => row.environment === 'live').length,
      test: own.filter((row) => row.environment === 'test').length,
    });
  }
});

it('finishes in-flight jobs on SIGTERM before exiting', async () => {
  if (!stack.worker.isRunning) await stack.worker.start();
  const app = apps[0];
  const payload = { ...batchFor(app, 99, 0), requestId: `crt_sigterm_${app.appId}` };
  const answer = client.submit(payload, SUBMIT_TIMEOUT_MS);
  expect(await untilTransactionOpen(SUBMIT_TIMEOUT_MS)).toBe(true);
  stack.worker.kill('SIGTERM');

  const outcome = await answer;
  expect(outcome.kind).toBe('completed');
  expect(await stack.worker.waitForExit(10_000)).toEqual({ code: 0, signal: null });
  const stored = await postgres.db
    .selectFrom('links')
    .select('id')
    .where('app_id', '=', app.appId)
    .where('title', 'like', 'round 99 %')
    .execute();
  expect(stored).toHaveLength(ENTRIES_PER_BATCH);
});
