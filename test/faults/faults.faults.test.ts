import { Agent, request } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { linkHostFor } from '@linkservice/contracts';
import type { Database } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import { eventually } from '@linkservice/testing';
import type { Kysely } from 'kysely';
import { clickKeys, LINK_HOST_SHARDS } from '@linkservice/link-cache';
import type { AnalyticsConsistency } from '../support/analytics-consistency';
import { checkAnalyticsConsistency, consistencySummary } from '../support/analytics-consistency';
import type { ExitInfo, ServiceName, Stack } from '../support/stack';
import { startStack } from '../support/stack';
import { createTenant } from '../support/tenants';
import type { Bounds } from './audit';
import { auditAnswers, auditClicks, auditCreations } from './audit';
import type { LoadTarget, RequestKind, RequestRecord } from './load';
import { LoadDriver, PERSON_USER_AGENT, REQUEST_KINDS, uniqueTag } from './load';
import { OwnPostgres } from './own-postgres';
import { OwnRedis } from './own-redis';
import { recordRow, writeReport } from './report';

/**
 * The issue-12 fault suite: the compiled stack against a Postgres cluster and a Redis of its own
 * (spare ports, never the shared ones), each fault under mixed load, as an operator would cause
 * it. Per fault: every request answered within its bound, 503 only with Retry-After, nothing lost,
 * nothing duplicated, no click over-counted, and every kind of request served again within
 * RECOVERY_MS by the same processes; and (issue 27) the click analytics consistent with the
 * clicks counted: per link, every rollup holds exactly what its clickCount gained, the app's
 * rows are the sum of its links', every breakdown sums to its total. The figures go to
 * test/faults/results/last-run.md.
 */

const CREATION_TIMEOUT_MS = 3_000;
const SHUTDOWN_GRACE_MS = 10_000;
const FREEZE_MS = 8_000;
const OUTAGE_MS = 5_000;
/** Load before the fault starts and after it ends. */
const LEAD_MS = 2_000;
const TAIL_MS = 3_000;
const RATE_PER_SECOND = 30;
/** The client's own give-up: far above every bound, so a hang is measured, not fatal. */
const CAP_MS = 30_000;
const RECOVERY_MS = 10_000;

/** Issue 12: reads answer (503 with Retry-After at worst) within 3 s of a frozen database. */
const READ_BOUND_MS = 3_000;
/** Issue 12: redirects fall back to Postgres and answer within 2 s whatever Redis does. */
const REDIRECT_BOUND_MS = 2_000;
/** Issue 12: a creation answers within CREATION_TIMEOUT_MS + 1 s whatever Redis does. */
const CREATION_BOUND_MS = CREATION_TIMEOUT_MS + 1_000;
/**
 * The issue gives no number for creations when Postgres is away; this suite states one: the
 * creation deadline plus a read's 3 s budget and 1 s of slack (authentication and the request's
 * own bookkeeping reach Postgres before and after the worker's wait).
 */
const CREATION_BOUND_POSTGRES_MS = CREATION_TIMEOUT_MS + 4_000;

const POSTGRES_BOUNDS: Bounds = {
  create: CREATION_BOUND_POSTGRES_MS,
  batch: CREATION_BOUND_POSTGRES_MS,
  get: READ_BOUND_MS,
  list: READ_BOUND_MS,
  'redirect-cached': READ_BOUND_MS,
  'redirect-uncached': READ_BOUND_MS,
};
const REDIS_BOUNDS: Bounds = {
  create: CREATION_BOUND_MS,
  batch: CREATION_BOUND_MS,
  get: READ_BOUND_MS,
  list: READ_BOUND_MS,
  'redirect-cached': REDIRECT_BOUND_MS,
  'redirect-uncached': REDIRECT_BOUND_MS,
};
/**
 * Faults of our own processes: the dependencies answer. A creation whose worker died waits out
 * CREATION_TIMEOUT_MS and settles; the slack is 2 s, not 1, because the process restarting beside
 * it (a second of CPU to start Node and connect) shares this machine's two cores with the gateway.
 */
const PROCESS_BOUNDS: Bounds = {
  ...REDIS_BOUNDS,
  create: CREATION_TIMEOUT_MS + 2_000,
  batch: CREATION_TIMEOUT_MS + 2_000,
};
const POSTGRES_BOUND_TEXT = `reads, redirects ≤ ${READ_BOUND_MS / 1000} s; creations ≤ ${CREATION_BOUND_POSTGRES_MS / 1000} s`;
const REDIS_BOUND_TEXT = `redirects ≤ ${REDIRECT_BOUND_MS / 1000} s; creations ≤ ${CREATION_BOUND_MS / 1000} s; reads ≤ ${READ_BOUND_MS / 1000} s`;

jest.setTimeout(180_000);

const suiteStartedAt = Date.now();
let postgres: OwnPostgres | undefined;
let redis: OwnRedis | undefined;
let databaseUrl: string;
let stack: Stack | undefined;

beforeAll(async () => {
  postgres = await OwnPostgres.create();
  redis = await OwnRedis.create();
  databaseUrl = await postgres.createMigratedDatabase('linkservice_faults');
  stack = await startStack({
    databaseUrl,
    redisUrl: redis.url,
    redisPrefix: 'faults',
    exactRedisPrefix: true,
    // The limiter stays in the path but never says no: refusals would hide what a fault does.
    creationLimitPerHour: 1_000_000,
    env: {
      CREATION_TIMEOUT_MS: String(CREATION_TIMEOUT_MS),
      CLICK_FLUSH_INTERVAL_MS: '500',
      // A click batch whose flush failed (Postgres away) is taken over after this: well within
      // the click audit's wait, so a click only delayed is not reported lost.
      CLICK_RECOVERY_AFTER_MS: '5000',
      SHUTDOWN_GRACE_MS: String(SHUTDOWN_GRACE_MS),
    },
    // A short pause in each creation transaction, so a worker SIGKILL lands mid-transaction.
    serviceEnv: { worker: { WORKER_TEST_DELAY_MS: '50' } },
  });
}, 120_000);

afterAll(async () => {
  writeReport(Date.now() - suiteStartedAt);
  // Whatever failed: nothing stays frozen, and nothing of the suite outlives it.
  await postgres?.thaw().catch(() => undefined);
  redis?.thaw();
  await stack?.stop(5_000);
  await redis?.remove();
  await postgres?.remove();
}, 60_000);

function theStack(): Stack {
  if (!stack) throw new Error('the stack did not start');
  return stack;
}

function ownPostgres(): OwnPostgres {
  if (!postgres) throw new Error('the suite has no Postgres');
  return postgres;
}

function ownRedis(): OwnRedis {
  if (!redis) throw new Error('the suite has no Redis');
  return redis;
}

/** A short-lived pool on the suite's database: one outlives no Postgres restart. */
async function withDb<T>(use: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const handle = createDb({ connectionString: databaseUrl, max: 2 });
  try {
    return await use(handle.db);
  } finally {
    await handle.close();
  }
}

/**
 * The analytics of the scenario's app once its clicks settled (after auditClicks): every link
 * of the app is new to the scenario, so its clickCount gained all it holds.
 */
function auditAnalytics(appId: string): Promise<AnalyticsConsistency> {
  return withDb((db) => checkAnalyticsConsistency(db, { appId }));
}

/** The report's cell: clicks answered / clickCount gained / analytics' total, and a verdict. */
function analyticsCell(answered: number, analytics: AnalyticsConsistency): string {
  return `${answered} / ${analytics.clickCountGained} / ${analytics.analyticsTotal}${analytics.problems.length === 0 ? '' : ` ✗ ${analytics.problems.length} inconsistent`}`;
}

interface PreparedApp {
  appId: string;
  target: LoadTarget;
  tag: string;
  /** Seeding's requests: creations and clicks the audits count too. */
  seed: RequestRecord[];
}

/**
 * An app of the scenario's own with 60 links made through the API: 20 followed once (so served
 * from the link cache), 40 never followed (the first redirect of each finds no cache entry).
 */
async function prepareApp(name: string): Promise<PreparedApp> {
  const current = theStack();
  const tenant = await withDb((db) => createTenant(db));
  const target: LoadTarget = {
    apiUrl: () => current.apiUrl,
    redirectUrl: () => current.redirect.url,
    linkHost: linkHostFor(tenant.subdomainKey, 'live', current.linkDomain),
    secret: tenant.live.secret,
    warm: [],
    cold: [],
  };
  const tag = uniqueTag(name);
  const seeder = new LoadDriver(target, { ratePerSecond: 1, capMs: CAP_MS, tag: `${tag}-seed` });
  const seed: RequestRecord[] = [];
  for (let n = 0; n < 15; n++) seed.push(await seeder.send('batch'));
  for (let n = 0; n < 20; n++) seed.push(await seeder.send('redirect-uncached'));
  const failed = seed.filter((r) => r.status !== 201 && r.status !== 302);
  if (failed.length > 0) {
    throw new Error(`seeding failed: ${JSON.stringify(failed.slice(0, 3))}\n${current.output()}`);
  }
  return { appId: tenant.appId, target, tag, seed };
}

/** Until each kind of request succeeds again; answers how long that took, or null. */
async function recover(
  app: PreparedApp,
  since: number,
): Promise<{
  ms: number | null;
  probes: RequestRecord[];
}> {
  const prober = new LoadDriver(app.target, {
    ratePerSecond: 1,
    capMs: CAP_MS,
    tag: `${app.tag}-rec`,
  });
  const probes: RequestRecord[] = [];
  const succeeded = (record: RequestRecord) =>
    record.status === 200 || record.status === 201 || record.status === 302;
  const outcomes = await Promise.all(
    REQUEST_KINDS.map((kind) =>
      eventually(
        async () => {
          const record = await prober.send(kind);
          probes.push(record);
          return succeeded(record) && Date.now();
        },
        { timeoutMs: Math.max(0, since + RECOVERY_MS - Date.now()), intervalMs: 200 },
      ).catch(() => null),
    ),
  );
  const ms = outcomes.every((at) => at !== null) ? Math.max(...outcomes) - since : null;
  return { ms, probes };
}

function pids(current: Stack): Record<string, number | undefined> {
  return Object.fromEntries(current.list().map((p) => [p.name, p.pid]));
}

interface LoadScenario {
  name: string;
  tagName: string;
  boundText: string;
  bounds: Bounds;
  /** Runs the fault and returns once it is over; facts it returns are checked against `facts`. */
  fault: () => Promise<Record<string, unknown>>;
  facts?: Record<string, unknown>;
  /** Services the fault restarts on purpose; every other keeps its pid. */
  restarts?: readonly ServiceName[];
  refusedAllowedFor?: readonly RequestKind[];
  cutAllowedFor?: readonly RequestKind[];
  /**
   * Lost clicks are reported, not failed: only where the fault itself may destroy counted
   * clicks (a Redis crash loses up to a second of writes with appendfsync everysec). A frozen or
   * cleanly restarted Redis, shorter than CLICK_TOKEN_TTL_SECONDS, loses none: clicks the
   * redirect could not count wait in memory and are reconciled once it answers.
   */
  clickLossAllowed?: boolean;
}

async function runLoadScenario(scenario: LoadScenario): Promise<void> {
  const current = theStack();
  const app = await prepareApp(scenario.tagName);
  const before = pids(current);
  const driver = new LoadDriver(app.target, {
    ratePerSecond: RATE_PER_SECOND,
    capMs: CAP_MS,
    tag: app.tag,
  });
  driver.start();
  let facts: Record<string, unknown> = {};
  try {
    await delay(LEAD_MS);
    facts = await scenario.fault();
  } catch (error) {
    // The fault could not be caused or ended: no figures, and no load left running.
    await driver.stop();
    throw error;
  }
  const faultEndedAt = Date.now();
  const [recovery] = await Promise.all([recover(app, faultEndedAt), delay(TAIL_MS)]);
  const records = await driver.stop();

  const after = pids(current);
  const restartedUnexpectedly = Object.keys(before).filter(
    (name) => !scenario.restarts?.includes(name as ServiceName) && before[name] !== after[name],
  );
  const answers = auditAnswers(records, {
    bounds: scenario.bounds,
    refusedAllowedFor: scenario.refusedAllowedFor,
    cutAllowedFor: scenario.cutAllowedFor,
  });
  const everything = [...app.seed, ...records, ...recovery.probes];
  const creations = await withDb((db) => auditCreations(db, app.appId, everything));
  const clicks = await withDb((db) =>
    auditClicks(
      db,
      app.appId,
      everything.filter((r) => r.alias !== undefined),
    ),
  );
  const analytics = await auditAnalytics(app.appId);

  const passed =
    answers.violations.length === 0 &&
    creations.lost + creations.duplicated + creations.createdDespiteRefusal + creations.unknown ===
      0 &&
    clicks.overCounted === 0 &&
    (scenario.clickLossAllowed || clicks.lost === 0) &&
    recovery.ms !== null &&
    analytics.problems.length === 0 &&
    restartedUnexpectedly.length === 0 &&
    JSON.stringify(facts) === JSON.stringify(scenario.facts ?? {});
  recordRow({
    fault: scenario.name,
    bound: scenario.boundText,
    worst: `${answers.worstMs} ms (${answers.worstKind ?? '-'})${answers.unanswered > 0 ? `; ${answers.unanswered} unanswered` : ''}`,
    lost: `${creations.lost} links; ${clicks.lost} clicks${scenario.clickLossAllowed ? ' (allowed: crash)' : ''}`,
    duplicated: String(creations.duplicated),
    overCounted: `${clicks.overCounted} (${clicks.counted} counted for ${clicks.expected} redirects)`,
    analytics: analyticsCell(clicks.expected, analytics),
    notes: [
      `${answers.requests} requests, ${answers.unavailable} × 503, ${answers.violations.length} over bound or malformed`,
      `worst by kind (ms): ${Object.entries(answers.worstByKind)
        .map(([kind, ms]) => `${kind} ${ms}`)
        .join(', ')}`,
      recovery.ms === null
        ? `NOT recovered within ${RECOVERY_MS} ms`
        : `recovered ${recovery.ms} ms after the fault`,
      creations.createdDespiteRefusal > 0
        ? `${creations.createdDespiteRefusal} refused yet created`
        : '',
      creations.createdUnanswered > 0
        ? `${creations.createdUnanswered} unanswered yet created`
        : '',
      Object.keys(facts).length > 0 ? JSON.stringify(facts) : '',
      consistencySummary(analytics),
      ...answers.violations.slice(0, 3),
    ]
      .filter((part) => part !== '')
      .join('; '),
    passed,
  });

  expect({
    violations: answers.violations.slice(0, 15),
    violationCount: answers.violations.length,
    lostLinks: creations.lost,
    duplicated: creations.duplicated,
    createdDespiteRefusal: creations.createdDespiteRefusal,
    unknownLinks: creations.unknown,
    creationDetails: creations.details.slice(0, 10),
    overCountedClicks: clicks.overCounted,
    lostClicks: scenario.clickLossAllowed ? 'allowed' : clicks.lost,
    recovered: recovery.ms !== null,
    analyticsProblems: analytics.problems.slice(0, 10),
    analyticsTotal: analytics.analyticsTotal,
    restartedUnexpectedly,
    facts,
  }).toEqual({
    violations: [],
    violationCount: 0,
    lostLinks: 0,
    duplicated: 0,
    createdDespiteRefusal: 0,
    unknownLinks: 0,
    creationDetails: [],
    overCountedClicks: 0,
    lostClicks: scenario.clickLossAllowed ? 'allowed' : 0,
    recovered: true,
    analyticsProblems: [],
    analyticsTotal: clicks.counted,
    restartedUnexpectedly: [],
    facts: scenario.facts ?? {},
  });
}

/** A fault that takes a dependency down, waits `ms`, and brings it back even if the wait fails. */
function downFor(ms: number, down: () => unknown, up: () => unknown) {
  return async () => {
    await down();
    try {
      await delay(ms);
    } finally {
      await up();
    }
    return {};
  };
}

it('Postgres frozen (SIGSTOP of every server process)', async () => {
  await runLoadScenario({
    name: `Postgres frozen ${FREEZE_MS / 1000} s`,
    tagName: 'pgfreeze',
    boundText: POSTGRES_BOUND_TEXT,
    bounds: POSTGRES_BOUNDS,
    fault: downFor(
      FREEZE_MS,
      () => ownPostgres().freeze(),
      () => ownPostgres().thaw(),
    ),
  });
});

it('Postgres stopped (pg_ctl stop -m fast) and started', async () => {
  await runLoadScenario({
    name: `Postgres stopped ${OUTAGE_MS / 1000} s, started`,
    tagName: 'pgstop',
    boundText: POSTGRES_BOUND_TEXT,
    bounds: POSTGRES_BOUNDS,
    fault: downFor(
      OUTAGE_MS,
      () => ownPostgres().stop(),
      () => ownPostgres().start(),
    ),
  });
});

it('Redis frozen (SIGSTOP)', async () => {
  await runLoadScenario({
    name: `Redis frozen ${FREEZE_MS / 1000} s`,
    tagName: 'redisfreeze',
    boundText: REDIS_BOUND_TEXT,
    bounds: REDIS_BOUNDS,
    fault: downFor(
      FREEZE_MS,
      () => ownRedis().freeze(),
      () => ownRedis().thaw(),
    ),
  });
});

it('Redis stopped (SIGTERM) and started', async () => {
  await runLoadScenario({
    name: `Redis stopped ${OUTAGE_MS / 1000} s, started`,
    tagName: 'redisstop',
    boundText: REDIS_BOUND_TEXT,
    bounds: REDIS_BOUNDS,
    fault: downFor(
      OUTAGE_MS,
      () => ownRedis().stop('SIGTERM'),
      () => ownRedis().start(),
    ),
  });
});

it('Redis killed (SIGKILL) and started', async () => {
  await runLoadScenario({
    name: 'Redis SIGKILL, started 2 s later',
    tagName: 'rediskill',
    boundText: REDIS_BOUND_TEXT,
    bounds: REDIS_BOUNDS,
    // appendfsync everysec: up to a second of counted clicks may go with the process.
    clickLossAllowed: true,
    fault: downFor(
      2_000,
      () => ownRedis().stop('SIGKILL'),
      () => ownRedis().start(),
    ),
  });
});

it('Redis restarted cleanly with AOF loses no counted click and no limiter state', async () => {
  const app = await prepareApp('aof');
  const prober = new LoadDriver(app.target, {
    ratePerSecond: 1,
    capMs: CAP_MS,
    tag: `${app.tag}-p`,
  });
  const remaining = (record: RequestRecord) => {
    if (record.status !== 201) throw new Error(`creation answered ${record.status}`);
    return Number(record.rateLimitRemaining);
  };
  const firstCreation = await prober.send('create');
  const remainingBefore = remaining(firstCreation);

  // The clicks must still be in Redis when it stops, not flushed: a link host of their own that
  // flushes only when it stops, under a Redis namespace of its own (its own pending clicks).
  const holder = await startStack({
    databaseUrl,
    redisUrl: ownRedis().url,
    redisPrefix: 'faults-aof',
    exactRedisPrefix: true,
    services: ['redirect'],
    env: { CLICK_FLUSH_INTERVAL_MS: '600000' },
  });
  const clicks: RequestRecord[] = [];
  let pending: number;
  let holderExit: ExitInfo | undefined;
  try {
    const holderClient = new LoadDriver(
      { ...app.target, redirectUrl: () => holder.redirect.url },
      { ratePerSecond: 1, capMs: CAP_MS, tag: `${app.tag}-h` },
    );
    for (let round = 0; round < 6; round++) {
      clicks.push(
        ...(await Promise.all(
          Array.from({ length: 10 }, () => holderClient.send('redirect-cached')),
        )),
      );
    }
    // For the note only: where the clicks wait is the link host's business.
    const client = ownRedis().client();
    // Each shard's pending hash; its link id fields are the clicks (the others their analytics).
    pending = await Promise.all(
      Array.from({ length: LINK_HOST_SHARDS }, (_, shard) =>
        client.hgetall(clickKeys('faults-aof', shard).pending),
      ),
    )
      .then((hashes) =>
        hashes
          .flatMap((hash) => Object.entries(hash))
          .filter(([field]) => !field.includes('\u001f'))
          .reduce((sum, [, value]) => sum + Number(value), 0),
      )
      .catch(() => -1);
    client.disconnect();
    await ownRedis().stop('SIGTERM');
    await ownRedis().start();
  } finally {
    // Its last flush, after the restart, moves whatever Redis kept into Postgres.
    holderExit = await holder.redirect.stop(SHUTDOWN_GRACE_MS);
  }

  const secondCreation = await eventually(
    async () => {
      const record = await prober.send('create');
      return record.status === 201 && record;
    },
    { timeoutMs: RECOVERY_MS, what: 'a creation after the restart' },
  );
  const remainingAfter = remaining(secondCreation);
  const everything = [...app.seed, firstCreation, ...clicks, secondCreation];
  const clickAudit = await withDb((db) =>
    auditClicks(
      db,
      app.appId,
      everything.filter((r) => r.alias !== undefined),
    ),
  );
  const limiterUnitsLost = remainingAfter - (remainingBefore - 1);
  const analytics = await auditAnalytics(app.appId);
  recordRow({
    fault: 'Redis restarted cleanly (SIGTERM), AOF',
    bound: 'no counted click, no limiter state lost',
    worst: `${Math.max(...clicks.map((r) => r.durationMs))} ms (redirect, before the stop)`,
    lost: `${clickAudit.lost} clicks; ${limiterUnitsLost} limiter units`,
    duplicated: '-',
    overCounted: `${clickAudit.overCounted} (${clickAudit.counted} counted for ${clickAudit.expected} redirects)`,
    analytics: analyticsCell(clickAudit.expected, analytics),
    notes: `${clicks.length} redirects, ${pending} clicks pending in Redis at the stop; RateLimit-Remaining ${remainingBefore} before, ${remainingAfter} after; holding link host exit ${JSON.stringify(holderExit)}; ${consistencySummary(analytics)}`,
    passed:
      clickAudit.lost === 0 &&
      clickAudit.overCounted === 0 &&
      limiterUnitsLost === 0 &&
      analytics.problems.length === 0,
  });
  expect(clicks.filter((r) => r.status !== 302)).toEqual([]);
  expect({
    lostClicks: clickAudit.lost,
    overCounted: clickAudit.overCounted,
    limiterUnitsLost,
    analyticsProblems: analytics.problems.slice(0, 10),
    analyticsTotal: analytics.analyticsTotal,
  }).toEqual({
    lostClicks: 0,
    overCounted: 0,
    limiterUnitsLost: 0,
    analyticsProblems: [],
    analyticsTotal: clickAudit.counted,
  });
});

it('worker SIGKILL under creation load, restarted', async () => {
  const worker = theStack().worker;
  await runLoadScenario({
    name: 'worker SIGKILL, restarted 2 s later',
    tagName: 'workerkill',
    boundText: `creations ≤ ${PROCESS_BOUNDS.create / 1000} s; reads ≤ ${READ_BOUND_MS / 1000} s; redirects ≤ ${REDIRECT_BOUND_MS / 1000} s`,
    bounds: PROCESS_BOUNDS,
    restarts: ['worker'],
    fault: async () => {
      worker.kill('SIGKILL');
      const exit = await worker.waitForExit();
      await delay(2_000);
      await worker.start();
      return { exit };
    },
    facts: { exit: { code: null, signal: 'SIGKILL' } },
  });
});

/** Click batches taken from the pending hashes and not yet applied (every shard's set). */
async function unappliedBatches(): Promise<number> {
  const client = ownRedis().client();
  try {
    const sizes = await Promise.all(
      Array.from({ length: LINK_HOST_SHARDS }, (_, shard) =>
        client.scard(clickKeys('faults', shard).batches),
      ),
    );
    return sizes.reduce((sum, size) => sum + size, 0);
  } finally {
    client.disconnect();
  }
}

it('redirect SIGKILL mid-flush under load: a new one recovers the batch, counted once', async () => {
  const current = theStack();
  const redirect = current.redirect;
  await runLoadScenario({
    name: 'redirect SIGKILL mid-flush, restarted',
    tagName: 'rdkill',
    boundText: POSTGRES_BOUND_TEXT,
    bounds: POSTGRES_BOUNDS,
    restarts: ['redirect'],
    // Requests in flight when it dies are cut, and its port refuses until the new one listens.
    cutAllowedFor: ['redirect-cached', 'redirect-uncached'],
    fault: async () => {
      // Postgres frozen under the flusher: within two flush intervals it has taken the pending
      // clicks into a batch and waits on the statement that applies them; then it dies.
      await ownPostgres().freeze();
      let exit: ExitInfo;
      let batchTaken: boolean;
      try {
        await delay(1_200);
        batchTaken = (await unappliedBatches()) > 0;
        redirect.kill('SIGKILL');
        exit = await redirect.waitForExit();
      } finally {
        // The dead process' statement may still run once Postgres resumes: the batch ledger
        // must then keep the new process' recovery of the same batch from counting it twice.
        await ownPostgres().thaw();
      }
      await redirect.start();
      return { exit, batchTaken };
    },
    facts: { exit: { code: null, signal: 'SIGKILL' }, batchTaken: true },
  });
});

it('gateway SIGTERM under load: drains, exits within the grace, restarted', async () => {
  const gateway = theStack().gateway;
  await runLoadScenario({
    name: 'gateway SIGTERM under load, restarted',
    tagName: 'gwterm',
    boundText: `in-flight answered; exit < ${SHUTDOWN_GRACE_MS / 1000} s; creations ≤ ${PROCESS_BOUNDS.create / 1000} s; reads ≤ ${READ_BOUND_MS / 1000} s`,
    bounds: PROCESS_BOUNDS,
    restarts: ['gateway'],
    // Once its port is closed, new connections are refused: a load balancer retries them.
    refusedAllowedFor: ['create', 'batch', 'get', 'list'],
    fault: async () => {
      const signalledAt = Date.now();
      gateway.kill('SIGTERM');
      const exit = await gateway.waitForExit(SHUTDOWN_GRACE_MS + 5_000);
      const exitMs = Date.now() - signalledAt;
      await gateway.start();
      return { exit, exitedWithinGrace: exitMs < SHUTDOWN_GRACE_MS };
    },
    facts: { exit: { code: 0, signal: null }, exitedWithinGrace: true },
  });
});

it('redirect SIGTERM with busy keep-alive clients: every request answered, exits well within the grace', async () => {
  const current = theStack();
  const app = await prepareApp('rdterm');
  const { port } = current.redirect;
  const CLIENTS = 8;
  const WARM_UP = 20;
  let warmedUp = 0;
  let allWarm: () => void = () => undefined;
  const warm = new Promise<void>((resolve) => (allWarm = resolve));
  const alias = app.target.warm[0]?.alias ?? '';

  interface ClientLog {
    answers: { status: number; ms: number }[];
    ended: string;
  }
  const clients = Array.from({ length: CLIENTS }, async (): Promise<ClientLog> => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const answers: ClientLog['answers'] = [];
    try {
      for (;;) {
        const startedAt = Date.now();
        try {
          const status = await new Promise<number>((resolve, reject) => {
            const req = request(
              {
                port,
                host: '127.0.0.1',
                path: `/${alias}`,
                agent,
                headers: { host: app.target.linkHost, 'user-agent': PERSON_USER_AGENT },
                timeout: CAP_MS,
              },
              (res) => {
                res.resume();
                res.on('end', () => {
                  resolve(res.statusCode ?? 0);
                });
                res.on('error', reject);
              },
            );
            req.on('timeout', () => req.destroy(new Error('timed out')));
            req.on('error', (error: NodeJS.ErrnoException) => {
              reject(Object.assign(error, { reused: req.reusedSocket }));
            });
            req.end();
          });
          answers.push({ status, ms: Date.now() - startedAt });
        } catch (error) {
          const failure = error as NodeJS.ErrnoException & { reused?: boolean };
          return {
            answers,
            ended: `${failure.code ?? failure.message} reused=${String(failure.reused)}`,
          };
        }
        if (answers.length === WARM_UP && ++warmedUp === CLIENTS) allWarm();
      }
    } finally {
      agent.destroy();
    }
  });
  await warm;
  const signalledAt = Date.now();
  current.redirect.kill('SIGTERM');
  const exit = await current.redirect.waitForExit(SHUTDOWN_GRACE_MS + 5_000);
  const exitMs = Date.now() - signalledAt;
  const logs = await Promise.all(clients);
  await current.redirect.start();

  const answers = logs.flatMap((log) => log.answers);
  const cut = logs.filter((log) => log.ended !== 'ECONNREFUSED reused=false');
  const redirects: RequestRecord[] = answers.map((answer) => ({
    kind: 'redirect-cached',
    startedAt: 0,
    durationMs: answer.ms,
    status: answer.status,
    retryAfter: null,
    alias,
  }));
  const clickAudit = await withDb((db) =>
    auditClicks(db, app.appId, [...app.seed.filter((r) => r.alias !== undefined), ...redirects]),
  );
  const worstMs = Math.max(...answers.map((a) => a.ms));
  const analytics = await auditAnalytics(app.appId);
  recordRow({
    fault: 'redirect SIGTERM, 8 busy keep-alive clients',
    bound: `every in-flight answered; exit < 2 s (grace ${SHUTDOWN_GRACE_MS / 1000} s)`,
    worst: `${worstMs} ms (redirect); exit ${exitMs} ms after SIGTERM`,
    lost: `${cut.length} requests cut; ${clickAudit.lost} clicks`,
    duplicated: '-',
    overCounted: `${clickAudit.overCounted} (${clickAudit.counted} counted for ${clickAudit.expected} redirects)`,
    analytics: analyticsCell(clickAudit.expected, analytics),
    notes: `${answers.length} redirects; exit ${JSON.stringify(exit)}; ${consistencySummary(analytics)}`,
    passed:
      analytics.problems.length === 0 &&
      cut.length === 0 &&
      exitMs < 2_000 &&
      exit.code === 0 &&
      clickAudit.lost === 0 &&
      clickAudit.overCounted === 0 &&
      answers.every((a) => a.status === 302 && a.ms <= REDIRECT_BOUND_MS),
  });
  expect({
    exit,
    exitedWellWithinGrace: exitMs < 2_000,
    cut: cut.map((log) => log.ended),
    notRedirected: answers.filter((a) => a.status !== 302).length,
    overBound: answers.filter((a) => a.ms > REDIRECT_BOUND_MS).length,
    lostClicks: clickAudit.lost,
    overCounted: clickAudit.overCounted,
    analyticsProblems: analytics.problems.slice(0, 10),
    analyticsTotal: analytics.analyticsTotal,
  }).toEqual({
    exit: { code: 0, signal: null },
    exitedWellWithinGrace: true,
    cut: [],
    notRedirected: 0,
    overBound: 0,
    lostClicks: 0,
    overCounted: 0,
    analyticsProblems: [],
    analyticsTotal: clickAudit.counted,
  });
});
