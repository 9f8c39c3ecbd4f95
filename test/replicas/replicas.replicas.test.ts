import { randomBytes } from 'node:crypto';
import { linkHostFor } from '@linkservice/contracts';
import type { DbHandle } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import { deleteKeysWithPrefix } from '@linkservice/testing';
import { Cluster, Redis } from 'ioredis';
import type { ScratchDatabase } from '../support/database';
import { createMigratedDatabase } from '../support/database';
import type { ServiceName, Stack } from '../support/stack';
import { RedisCluster } from '../support/redis-cluster';
import { writeTierReport } from '../support/tier-report';
import { startStack } from '../support/stack';
import { createTenant } from '../support/tenants';
import type { LoadApp, LoadRecords } from './mixed-load';
import { runMixedLoad } from './mixed-load';
import type { CreationLine } from './worker-groups';
import { groupFigures, parseCreationLine } from './worker-groups';

/**
 * Issue 26, item 4: two gateways, two workers and two redirects (the compiled services, two
 * stacks sharing one database and one Redis namespace) under one mixed load sent through both
 * gateways and both redirects at once. The guarantees must hold across processes: the hourly
 * creation limit exact, no link lost or duplicated (an Idempotency-Key retried through the other
 * gateway included), clicks exact once both redirects stopped, and group commit at work in both
 * workers for both gateways. The figures go to stdout and test/replicas/results/last-run.md.
 *
 * It runs twice: on the local Redis, and on a Redis Cluster of its own (test/support/redis-cluster.ts:
 * three masters, three replicas on spare ports, removed afterwards), the services then given
 * REDIS_CLUSTER_NODES.
 */

const CREATION_LIMIT_PER_HOUR = 50;
const LOCAL_REDIS = 'redis://127.0.0.1:6379';

type RedisTarget = { url: string } | { clusterNodes: string };

/** Where the run's Redis is, and how to remove it (the cluster the tier started). */
interface RedisUnderTest {
  target: RedisTarget;
  remove: () => Promise<void>;
}

const MODES: [string, () => Promise<RedisUnderTest>][] = [
  [
    'the local Redis',
    () =>
      Promise.resolve({
        target: { url: process.env.REDIS_URL ?? LOCAL_REDIS },
        remove: () => Promise.resolve(),
      }),
  ],
  [
    'a Redis Cluster',
    async () => {
      const cluster = await RedisCluster.start();
      return { target: { clusterNodes: cluster.nodesString }, remove: () => cluster.stop() };
    },
  ],
];

const PLAN = {
  singlesPerApp: 10,
  batchesPerApp: 4,
  batchSize: 5,
  idempotentPairsPerApp: 4,
  // 30 singles and 10 batches of 5: 80 entries for 50 units.
  limitedSingles: 30,
  limitedBatches: 10,
  redirectsPerLink: 4,
  concurrency: 24,
};
const APPS = 12;

jest.setTimeout(240_000);

let startedAt = Date.now();
let redisUnderTest: RedisUnderTest | undefined;
let database: ScratchDatabase | undefined;
let postgres: DbHandle | undefined;
let redisPrefix: string;
const stacks: Stack[] = [];
const workerLines: CreationLine[] = [];

/** Two of each service: two stacks on one database and one exact Redis prefix. */
async function startReplicas(target: RedisTarget, databaseUrl: string): Promise<Stack[]> {
  const names = ['a', 'b'];
  return Promise.all(
    names.map((name) =>
      startStack({
        databaseUrl,
        redisUrl: 'url' in target ? target.url : LOCAL_REDIS,
        ...('clusterNodes' in target && { redisClusterNodes: target.clusterNodes }),
        redisPrefix,
        exactRedisPrefix: true,
        creationLimitPerHour: CREATION_LIMIT_PER_HOUR,
        env: { CLICK_FLUSH_INTERVAL_MS: '500' },
        // Each request's `creation job finished` line says which group job carried it.
        serviceEnv: { worker: { LOG_LEVEL: 'info' } },
        onLine: (service: ServiceName, line: string) => {
          if (service !== 'worker') return;
          const parsed = parseCreationLine(`worker-${name}`, line);
          if (parsed) workerLines.push(parsed);
        },
      }),
    ),
  );
}

function redisClient(target: RedisTarget): Redis | Cluster {
  if ('url' in target) return new Redis(target.url, { maxRetriesPerRequest: 2 });
  return new Cluster(
    target.clusterNodes.split(',').map((node) => {
      const [host, port] = node.split(':');
      return { host, port: Number(port) };
    }),
  );
}

function redisTarget(): RedisTarget {
  if (!redisUnderTest) throw new Error('no Redis to test on');
  return redisUnderTest.target;
}

describe.each(MODES)('on %s', (_label, startRedis) => {
  beforeAll(async () => {
    startedAt = Date.now();
    stacks.length = 0;
    workerLines.length = 0;
    redisUnderTest = await startRedis();
    redisPrefix = `lsreplicas-${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
    database = await createMigratedDatabase({ namePrefix: 'linkservice_replicas' });
    postgres = createDb({ connectionString: database.url, max: 4 });
    stacks.push(...(await startReplicas(redisTarget(), database.url)));
  }, 120_000);

  afterAll(async () => {
    await Promise.all(stacks.map((stack) => stack.stop(5_000)));
    await postgres?.close();
    await database?.drop();
    if (redisUnderTest) {
      const redis = redisClient(redisUnderTest.target);
      try {
        await deleteKeysWithPrefix(redis, redisPrefix);
      } finally {
        redis.disconnect();
        await redisUnderTest.remove();
      }
    }
  }, 60_000);

  it('keeps every guarantee with two gateways, two workers and two redirects', checkGuarantees);
});

function db() {
  if (!postgres) throw new Error('the database did not open');
  return postgres.db;
}

async function newApp(): Promise<LoadApp> {
  const tenant = await createTenant(db());
  return {
    appId: tenant.appId,
    secret: tenant.live.secret,
    linkHost: linkHostFor(tenant.subdomainKey, 'live', stacks[0]!.linkDomain),
  };
}

interface Row {
  check: string;
  figure: string;
  expected: string;
  passed: boolean;
}

async function checkGuarantees(): Promise<void> {
  const apps = await Promise.all(Array.from({ length: APPS }, newApp));
  const limited = await newApp();
  const loadStartedAt = Date.now();
  const records: LoadRecords = await runMixedLoad(
    {
      gateways: stacks.map((stack, n) => ({ name: `gw${n}`, apiUrl: stack.apiUrl })),
      redirects: stacks.map((stack, n) => ({ name: `rd${n}`, url: stack.redirect.url })),
    },
    { ...PLAN, apps, limited, tag: `r${randomBytes(3).toString('hex')}` },
  );
  const loadMs = Date.now() - loadStartedAt;
  // Both link hosts stop: the last flush of each writes every click it counted.
  await Promise.all(stacks.map((stack) => stack.redirect.stop()));

  const rows: Row[] = [];
  const row = (check: string, figure: number | string, expected: number | string) =>
    rows.push({
      check,
      figure: String(figure),
      expected: String(expected),
      passed: String(figure) === String(expected),
    });

  // The hourly limit across both gateways: exactly LIMIT links, every other entry refused.
  const limitedRecords = records.creations.filter((record) => record.app === limited.appId);
  const limitedOk = limitedRecords.flatMap((r) => r.outcomes).filter((o) => o.ok).length;
  const limitedRefusedOther = limitedRecords
    .flatMap((r) => r.outcomes)
    .filter((o) => !o.ok && o.code !== 'rate_limited' && o.code !== 'not_attempted:rate_limited');
  const limitedRows = await countLinks([limited.appId]);
  const limitedSent = limitedRecords.reduce((sum, r) => sum + r.markers.length, 0);
  row(
    `limited app: entries answered created (of ${limitedSent} sent)`,
    limitedOk,
    CREATION_LIMIT_PER_HOUR,
  );
  row('limited app: links in Postgres', limitedRows, CREATION_LIMIT_PER_HOUR);
  row('limited app: refusals other than rate_limited', limitedRefusedOther.length, 0);
  const limited429 = limitedRecords.filter((r) => r.status === 429).length;
  const limitedByGateway = new Map<string, number>();
  for (const record of limitedRecords) {
    const ok = record.outcomes.filter((o) => o.ok).length;
    limitedByGateway.set(record.gateway, (limitedByGateway.get(record.gateway) ?? 0) + ok);
  }

  // No link lost, none duplicated, on every app.
  const allApps = [...apps, limited].map((app) => app.appId);
  const stored = await db()
    .selectFrom('links')
    .select(['id', 'title'])
    .where('app_id', 'in', allApps)
    .execute();
  const storedIds = new Set(stored.map((link) => link.id));
  const answeredIds = new Set(
    records.creations.flatMap((r) => r.outcomes.flatMap((o) => (o.ok ? [o.link.id] : []))),
  );
  const lost = [...answeredIds].filter((id) => !storedIds.has(id));
  const byTitle = new Map<string, number>();
  for (const link of stored)
    byTitle.set(link.title ?? '', (byTitle.get(link.title ?? '') ?? 0) + 1);
  const duplicated = [...byTitle.values()].filter((held) => held > 1).length;
  const unexpectedFailures = records.creations.filter(
    (r) => r.app !== limited.appId && r.outcomes.some((o) => !o.ok),
  );
  row('links answered created', answeredIds.size, stored.length);
  row('links lost (answered, not stored)', lost.length, 0);
  row('markers stored more than once', duplicated, 0);
  row('unlimited apps: creations refused', unexpectedFailures.length, 0);

  // Idempotency-Key retried through the other gateway: one link, the same answer, one replay.
  const byKey = new Map<string, typeof records.creations>();
  for (const record of records.creations) {
    if (record.idempotencyKey === undefined) continue;
    byKey.set(record.idempotencyKey, [...(byKey.get(record.idempotencyKey) ?? []), record]);
  }
  let pairsOneLink = 0;
  let replays = 0;
  for (const pair of byKey.values()) {
    const ids = new Set(pair.flatMap((r) => r.outcomes.flatMap((o) => (o.ok ? [o.link.id] : []))));
    const gateways = new Set(pair.map((r) => r.gateway));
    const held = byTitle.get(pair[0]!.markers[0]!) ?? 0;
    if (pair.length === 2 && ids.size === 1 && gateways.size === 2 && held === 1) pairsOneLink += 1;
    replays += pair.filter((r) => r.replayed).length;
  }
  row('Idempotency-Key pairs (two gateways) with one link', pairsOneLink, byKey.size);
  row('  of which answered as a replay', replays, byKey.size);

  // Reads through both gateways.
  row(
    'reads answered 200',
    records.reads.filter((r) => r.status === 200).length,
    records.reads.length,
  );

  // Clicks: every 302 counted once, in Postgres, after both redirects flushed and stopped.
  const redirected = new Map<string, number>();
  for (const record of records.redirects) {
    if (record.status === 302)
      redirected.set(record.alias, (redirected.get(record.alias) ?? 0) + 1);
  }
  const clicks = await db()
    .selectFrom('links')
    .innerJoin('link_clicks', 'link_clicks.link_id', 'links.id')
    .select(['links.alias', 'link_clicks.click_count'])
    .where('links.app_id', 'in', allApps)
    .execute();
  const counted = new Map(clicks.map((click) => [click.alias, Number(click.click_count)]));
  const sum = (values: Iterable<number>) => [...values].reduce((total, n) => total + n, 0);
  const mismatched = [...new Set([...redirected.keys(), ...counted.keys()])].filter(
    (alias) => (redirected.get(alias) ?? 0) !== (counted.get(alias) ?? 0),
  );
  row('redirects answered 302', sum(redirected.values()), records.redirects.length);
  row('clicks in Postgres', sum(counted.values()), sum(redirected.values()));
  row('links whose clicks differ from their 302s', mismatched.length, 0);

  // Group commit: both workers wrote groups, of both gateways, some holding several requests.
  const groups = groupFigures(workerLines, (reqId) => reqId.split('-')[0]);
  const workerRequests = (worker: string, gateway: string) =>
    groups.requestsByWorkerAndGateway.get(worker)?.get(gateway) ?? 0;
  const workersWithBoth = ['worker-a', 'worker-b'].filter(
    (worker) => workerRequests(worker, 'gw0') > 0 && workerRequests(worker, 'gw1') > 0,
  ).length;
  const shared = sum([...groups.groupsByWorker.values()].map((figures) => figures.shared));
  const reachedWorker = records.creations.filter(
    (r) => !r.replayed && r.outcomes.some((o) => o.ok),
  ).length;
  const loggedRequests = new Set(workerLines.map((line) => line.reqId));
  row('workers answering requests of both gateways', workersWithBoth, 2);
  row('group jobs holding several requests', shared > 0 ? 'some' : 'none', 'some');
  row(
    'created requests with a worker log line',
    records.creations.filter(
      (r) => !r.replayed && r.outcomes.some((o) => o.ok) && loggedRequests.has(r.reqId),
    ).length,
    reachedWorker,
  );

  const groupLines = [...groups.groupsByWorker].map(([worker, figures]) => {
    const perGateway = ['gw0', 'gw1'].map((gw) => `${gw} ${workerRequests(worker, gw)}`).join(', ');
    return `- ${worker}: ${figures.groups} group jobs (${figures.shared} with several requests, largest ${figures.largest}); requests by gateway: ${perGateway}`;
  });
  const report = [
    `Replicas tier (2 gateways, 2 workers, 2 redirects; Redis ${'url' in redisTarget() ? 'single' : 'cluster'}), ${new Date().toISOString()}: load ${loadMs} ms, ${Math.round((Date.now() - startedAt) / 1000)} s in all.`,
    `${records.creations.length} creations, ${records.reads.length} reads, ${records.redirects.length} redirects; limit ${CREATION_LIMIT_PER_HOUR}/h: the limited app got ${limited429} answers 429, created per gateway ${[...limitedByGateway].map(([gw, n]) => `${gw} ${n}`).join(', ')}.`,
    '',
    '| check | measured | expected |',
    '| --- | --- | --- |',
    ...rows.map((r) => `| ${r.passed ? '' : '✗ '}${r.check} | ${r.figure} | ${r.expected} |`),
    '',
    ...groupLines,
    `- groups mixing gateways: ${groups.mixedGateways} (a group is gathered by one gateway; the workers share every gateway's groups)`,
    '',
  ].join('\n');
  writeTierReport(
    __dirname,
    report,
    `last-run-${'url' in redisTarget() ? 'single' : 'cluster'}.md`,
  );

  const failed = rows.filter((r) => !r.passed);
  expect(failed.map((r) => `${r.check}: ${r.figure}, expected ${r.expected}`)).toEqual([]);
  expect(lost).toEqual([]);
  expect(mismatched).toEqual([]);
}

async function countLinks(appIds: string[]): Promise<number> {
  const rows = await db().selectFrom('links').select('id').where('app_id', 'in', appIds).execute();
  return rows.length;
}
