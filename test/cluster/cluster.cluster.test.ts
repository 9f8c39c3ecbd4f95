import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { LinkServiceClient } from '@linkservice/app-sdk';
import { clickTokenFromReferrer, createClient } from '@linkservice/app-sdk';
import type { Link } from '@linkservice/contracts';
import { linkHostFor } from '@linkservice/contracts';
import { CREATE_LINKS_QUEUE } from '@linkservice/creation';
import type { DbHandle } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import {
  LINK_HOST_SHARD_TAGS,
  clickTokenKey,
  hashClickToken,
  linkCacheKeys,
  shardOfLink,
} from '@linkservice/link-cache';
import { eventually, linkOf } from '@linkservice/testing';
import { Redis } from 'ioredis';
import type { Bounds } from '../faults/audit';
import { auditAnswers, auditClicks, auditCreations } from '../faults/audit';
import type { LoadTarget, RequestRecord } from '../faults/load';
import { LoadDriver, uniqueTag } from '../faults/load';
import type { StackApp } from '../support/app-journey';
import {
  ANDROID,
  IPHONE,
  callApi,
  createStackApp,
  createStackLink,
  followLink,
  testFetch,
} from '../support/app-journey';
import type { ScratchDatabase } from '../support/database';
import { createMigratedDatabase } from '../support/database';
import { linkLifecycleJourney } from '../support/link-journey';
import { stackLinkctl } from '../support/linkctl';
import type { Failover } from '../support/redis-cluster';
import { RedisCluster } from '../support/redis-cluster';
import type { Stack } from '../support/stack';
import { sendApiRequest, startStack } from '../support/stack';
import { createTenant } from '../support/tenants';
import { recordFailover, writeClusterReport } from './report';

/**
 * Issue 26, item 2: the compiled stack on a Redis Cluster of the suite's own (three masters,
 * three replicas on spare ports, test/support/redis-cluster.ts), with REDIS_CLUSTER_NODES instead
 * of REDIS_URL. First the journeys, then a master killed under mixed load: the one holding the
 * creation queue's slot, which also holds some of the link host's shards. The failover may lose
 * only what docs/operations.md ("Redis Cluster: what a failover loses") says it may.
 */

jest.setTimeout(240_000);

/** Per app and hour: the journeys' app stays below it, the limit test's app reaches it. */
const CREATION_LIMIT_PER_HOUR = 30;
const CLICK_FLUSH_INTERVAL_MS = 1_000;
/**
 * How long a service's stop may take: the longest default SHUTDOWN_GRACE_MS (the worker's, 15 s,
 * its drain's bound) and 5 s to close its clients, the least the chart's
 * terminationGracePeriodSeconds must allow (values.yaml, 30 s by default).
 */
const TERMINATION_GRACE_MS = 15_000 + 5_000;
const CREATION_TIMEOUT_MS = 3_000;
const RATE_PER_SECOND = 30;
const CAP_MS = 15_000;
/** Load before the kill, and after the cluster serves every slot again. */
const LEAD_MS = 4_000;
const TAIL_MS = 4_000;
/**
 * After the promotion, clients learn the new slot map on their next MOVED or failed call and
 * a creation in flight at the kill runs out its CREATION_TIMEOUT_MS: errors may start until then.
 */
const SETTLE_AFTER_PROMOTION_MS = CREATION_TIMEOUT_MS + 1_000;

const suiteStartedAt = Date.now();
let cluster: RedisCluster | undefined;
let database: ScratchDatabase | undefined;
let postgres: DbHandle | undefined;
const stacks: Stack[] = [];

beforeAll(async () => {
  [cluster, database] = await Promise.all([
    RedisCluster.start(),
    createMigratedDatabase({ namePrefix: 'linkservice_cluster' }),
  ]);
  postgres = createDb({ connectionString: database.url, max: 4 });
}, 120_000);

afterAll(async () => {
  await Promise.all(stacks.map((stack) => stack.stop(5_000)));
  await postgres?.close();
  await database?.drop();
  await cluster?.stop();
}, 60_000);

function theCluster(): RedisCluster {
  if (!cluster) throw new Error('the Redis Cluster did not start');
  return cluster;
}

function db() {
  if (!postgres) throw new Error('the database did not open');
  return postgres.db;
}

async function startClusterStack(options: {
  creationLimitPerHour?: number;
  env?: Record<string, string>;
}): Promise<Stack> {
  if (!database) throw new Error('no database');
  const stack = await startStack({
    databaseUrl: database.url,
    // Never used: the services get REDIS_CLUSTER_NODES.
    redisUrl: 'redis://127.0.0.1:1',
    redisClusterNodes: theCluster().nodesString,
    redisPrefix: `lscluster-${Date.now().toString(36)}${randomBytes(2).toString('hex')}`,
    exactRedisPrefix: true,
    creationLimitPerHour: options.creationLimitPerHour,
    // Its warnings are the log a service that did not stop cleanly shows (runFailover).
    logLevel: 'warn',
    env: { CLICK_FLUSH_INTERVAL_MS: String(CLICK_FLUSH_INTERVAL_MS), ...options.env },
  });
  stacks.push(stack);
  return stack;
}

describe('the local Redis Cluster', () => {
  it('serves every slot from three masters, each with a replica, and knows which holds a key', async () => {
    const ranges = await theCluster().slots();
    expect(ranges.reduce((sum, r) => sum + r.to - r.from + 1, 0)).toBe(16_384);
    expect(await theCluster().masterPorts()).toHaveLength(3);
    expect(ranges.every((r) => r.replicaPorts.length === 1)).toBe(true);
    expect(theCluster().nodesString.split(',')).toHaveLength(6);

    const redis = theCluster().client();
    try {
      const key = `lscluster-harness:${randomBytes(4).toString('hex')}`;
      await redis.set(key, 'here', 'EX', 60);
      const owner = await theCluster().masterOf(key);
      // Read from each master alone: only the owner has it, the others answer MOVED.
      for (const port of await theCluster().masterPorts()) {
        const node = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
        try {
          await node.connect();
          const read = node.get(key);
          if (port === owner) await expect(read).resolves.toBe('here');
          else await expect(read).rejects.toThrow(/MOVED/);
        } finally {
          node.disconnect();
        }
      }
      await redis.del(key);
    } finally {
      redis.disconnect();
    }
  });
});

describe('the journeys, through a Redis Cluster', () => {
  let stack: Stack;
  let app: StackApp;

  beforeAll(async () => {
    stack = await startClusterStack({ creationLimitPerHour: CREATION_LIMIT_PER_HOUR });
    app = await createStackApp(stack, 'Cluster Journey');
  }, 60_000);

  it('creates, reads, lists, follows, counts, changes and archives a link', async () => {
    await linkLifecycleJourney(stack, app);
  });

  it('answers a batch with a 207, replays an Idempotency-Key, and refuses past the hourly limit', async () => {
    const other = await createStackApp(stack, 'Cluster Limits');
    const taken = `taken-${randomBytes(3).toString('hex')}`;
    await createStackLink(stack, other, { alias: taken, webFallbackUrl: 'https://a.example' });
    // One unit used. A batch of two: one alias taken, one new.
    const batch = await callApi(stack, other, 'POST', '/links/batch', {
      links: [
        { alias: taken, webFallbackUrl: 'https://a.example' },
        { webFallbackUrl: 'https://b.example' },
      ],
    });
    expect(batch.status).toBe(207);
    const results = (batch.body as { results: { index: number; ok: boolean }[] }).results;
    expect(results.map((r) => [r.index, r.ok])).toEqual([
      [0, false],
      [1, true],
    ]);

    const key = `idem-${randomBytes(6).toString('hex')}`;
    const send = () =>
      sendApiRequest(`${stack.apiUrl}/links`, {
        method: 'POST',
        key: other.secret,
        headers: { 'idempotency-key': key },
        body: { webFallbackUrl: 'https://idem.example' },
      });
    const first = await send();
    expect(first.status).toBe(201);
    const replay = await send();
    expect(replay.status).toBe(201);
    expect(linkOf(replay).id).toBe(linkOf(first).id);

    // The limiter's count lives in Redis: RateLimit-Remaining says how many more it allows,
    // and exactly that many are created before the next is refused.
    const remaining = Number(first.headers.get('ratelimit-remaining'));
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThan(CREATION_LIMIT_PER_HOUR);
    for (let n = 0; n < remaining; n++) {
      const more = await callApi(stack, other, 'POST', '/links', {
        webFallbackUrl: `https://more.example/${n}`,
      });
      expect(more.status).toBe(201);
    }
    const refused = await callApi(stack, other, 'POST', '/links', {
      webFallbackUrl: 'https://f.example',
    });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: 'rate_limited' });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('resolves a link for the app, matches an install by the click token the link host minted, and erases it', async () => {
    const deepLinkData = { screen: 'cluster', n: 1 };
    const link = await createStackLink(stack, app, {
      webFallbackUrl: 'https://play.google.com/store/apps/details?id=com.cluster.app',
      deepLinkData,
    });
    const client: LinkServiceClient = createClient({
      baseUrl: stack.gateway.url,
      publishableKey: app.publishable.live,
      fetch: testFetch,
      linkHosts: [app.linkHost, app.testLinkHost],
    });
    const resolved = await client.resolve(`${link.url}?utm_source=cluster`);
    expect(resolved).toMatchObject({ link: { id: link.id }, deepLinkData });

    const tap = await followLink(stack, app, link.alias, { userAgent: ANDROID });
    expect(tap.status).toBe(302);
    const playReferrer = new URL(tap.headers.get('location')!).searchParams.get('referrer')!;
    const token = clickTokenFromReferrer(playReferrer)!;
    // The token's record lives in the alias' shard, on whichever master serves that slot.
    const redis = theCluster().client();
    try {
      const tokenKey = clickTokenKey(stack.redisPrefix, hashClickToken(token));
      const aliasShard = shardOfLink({
        subdomainKey: app.subdomainKey,
        environment: 'live',
        alias: link.alias,
      });
      expect(await theCluster().slotOf(tokenKey)).toBe(
        await theCluster().slotOf(`{${LINK_HOST_SHARD_TAGS[aliasShard]}}`),
      );
      expect(await redis.get(tokenKey)).not.toBeNull();

      const report = await client.reportInstall({ platform: 'android', playReferrer });
      expect(report.match).toMatchObject({ type: 'deterministic', method: 'play_referrer' });
      expect(report.deepLinkData).toEqual(deepLinkData);
      const again = await client.reportInstall({ platform: 'android', playReferrer });
      expect(again.match.type).toBe('none');

      const erasure = await client.eraseInstall(report.install.id, report.install.secret);
      expect(erasure.erased).toMatchObject({ installId: report.install.id, records: 2 });
      const left = await db()
        .selectFrom('installs')
        .select('id')
        .where('id', '=', report.install.id)
        .execute();
      expect(left).toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  it('counts every click exactly once the flushers ran, on links spread over every master', async () => {
    // An app of its own: this test creates as many links as it takes, not within the limit.
    const spread = await createStackApp(stack, 'Cluster Spread');
    const links = await linksOnEveryMaster(stack, spread, 2);
    const clicks = links.map((_, n) => 1 + (n % 4));
    for (const [n, link] of links.entries()) {
      for (let c = 0; c < clicks[n]!; c++) {
        expect((await followLink(stack, spread, link.alias)).status).toBe(302);
      }
    }
    const counts = await eventually(
      async () => {
        const rows = await db()
          .selectFrom('link_clicks')
          .select(['link_id', 'click_count'])
          .where(
            'link_id',
            'in',
            links.map((l) => l.id),
          )
          .execute();
        const byId = new Map(rows.map((row) => [row.link_id, Number(row.click_count)]));
        const seen = links.map((link) => byId.get(link.id) ?? 0);
        return seen.every((count, n) => count >= clicks[n]!) && seen;
      },
      { timeoutMs: 10_000, intervalMs: 200, what: 'every click flushed' },
    );
    expect(counts).toEqual(clicks);
  });

  it('changes what every master’s cached links answer when linkctl turns the iOS page on', async () => {
    const ios = await createStackApp(stack, 'Cluster iOS');
    const iphone = { userAgent: IPHONE };
    const links = await linksOnEveryMaster(stack, ios, 1, {
      iosFallbackUrl: 'https://apps.apple.com/app/id1',
    });
    const redis = theCluster().client();
    try {
      for (const link of links) {
        expect((await followLink(stack, ios, link.alias, iphone)).status).toBe(302);
        const { entry } = linkCacheKeys(stack.redisPrefix, {
          subdomainKey: ios.subdomainKey,
          environment: 'live',
          alias: link.alias,
        });
        expect(await redis.exists(entry)).toBe(1);
      }
    } finally {
      redis.disconnect();
    }
    await stackLinkctl(
      stack,
      ...['app', 'set-ios', ios.appId, '--team-id', 'ABCDE12345', '--bundle-id', 'com.cluster'],
      ...['--deferred-page', 'on'],
    );
    // The very next tap on each sees the change: the page, not the cached 302.
    for (const link of links) {
      const after = await followLink(stack, ios, link.alias, iphone);
      expect(after.status).toBe(200);
      expect(after.text).toContain('id="link"');
    }
  });
});

/**
 * Links of `app` (through the API) until each master serves the shards of at least `perMaster`
 * of them: an alias' shard follows from its hash, so how many that takes varies.
 */
async function linksOnEveryMaster(
  stack: Stack,
  app: StackApp,
  perMaster: number,
  fields: Record<string, unknown> = {},
): Promise<Link[]> {
  const links: Link[] = [];
  const perPort = new Map<number, number>();
  const masters = await theCluster().masterPorts();
  while (masters.some((port) => (perPort.get(port) ?? 0) < perMaster)) {
    if (links.length >= 40) throw new Error(`40 aliases and a master still has < ${perMaster}`);
    const link = await createStackLink(stack, app, {
      webFallbackUrl: `https://spread.example/${links.length}`,
      ...fields,
    });
    links.push(link);
    const port = await masterOfAlias(app.subdomainKey, link.alias);
    perPort.set(port, (perPort.get(port) ?? 0) + 1);
  }
  return links;
}

/** The master serving the shard of a live alias of `subdomainKey`. */
function masterOfAlias(subdomainKey: string, alias: string): Promise<number> {
  const shard = shardOfLink({ subdomainKey, environment: 'live', alias });
  return theCluster().masterOf(`{${LINK_HOST_SHARD_TAGS[shard]}}`);
}

const FAILOVER_BOUNDS: Bounds = {
  create: CAP_MS,
  batch: CAP_MS,
  get: CAP_MS,
  list: CAP_MS,
  'redirect-cached': CAP_MS,
  'redirect-uncached': CAP_MS,
};

interface ScenarioMasters {
  /** The creation queue's slot. */
  queue: number;
  /** Each link host shard's, in shard order. */
  shards: readonly number[];
  /** The app's hourly creation counter's (`<prefix>:creation-limit:<appId>`, the gateway's). */
  counter: number;
}

interface Scenario {
  name: string;
  /** Picks the master to kill, given who serves what of the scenario's stack and app. */
  victim: (masters: ScenarioMasters) => Promise<number> | number;
}

/**
 * Mixed load on a stack of its own (a fresh app: 60 links through the API, 30 of them followed
 * once), a master SIGKILLed after LEAD_MS, the load kept TAIL_MS past the promotion, then the
 * audits once the services stopped cleanly. Records the figures and asserts the docs' bounds.
 */
async function runFailover(scenario: Scenario): Promise<void> {
  const stack = await startClusterStack({
    env: { CREATION_TIMEOUT_MS: String(CREATION_TIMEOUT_MS), CLICK_RECOVERY_AFTER_MS: '3000' },
  });
  const tenant = await createTenant(db());
  const target: LoadTarget = {
    apiUrl: () => stack.apiUrl,
    redirectUrl: () => stack.redirect.url,
    linkHost: linkHostFor(tenant.subdomainKey, 'live', stack.linkDomain),
    secret: tenant.live.secret,
    warm: [],
    cold: [],
  };
  const tag = uniqueTag('failover');
  const seeder = new LoadDriver(target, { ratePerSecond: 1, capMs: CAP_MS, tag: `${tag}-seed` });
  const seed: RequestRecord[] = [];
  for (let n = 0; n < 15; n++) seed.push(await seeder.send('batch'));
  for (let n = 0; n < 30; n++) seed.push(await seeder.send('redirect-uncached'));
  expect(seed.filter((r) => r.status !== 201 && r.status !== 302)).toEqual([]);

  const queueMaster = await theCluster().masterOf(`{${CREATE_LINKS_QUEUE}}`);
  const shardMasters = await Promise.all(
    LINK_HOST_SHARD_TAGS.map((shardTag) => theCluster().masterOf(`{${shardTag}}`)),
  );
  const counterMaster = await theCluster().masterOf(
    `${stack.redisPrefix}:creation-limit:${tenant.appId}`,
  );
  const victim = await scenario.victim({
    queue: queueMaster,
    shards: shardMasters,
    counter: counterMaster,
  });
  const killedShards = shardMasters.filter((port) => port === victim).length;
  // Every master holds some of the link host's shards: each kill hits clicks of the load.
  expect(killedShards).toBeGreaterThan(0);
  const onKilledMaster = (alias: string) =>
    shardMasters[shardOfLink({ subdomainKey: tenant.subdomainKey, environment: 'live', alias })] ===
    victim;

  const driver = new LoadDriver(target, { ratePerSecond: RATE_PER_SECOND, capMs: CAP_MS, tag });
  driver.start();
  let failover: Failover;
  try {
    await delay(LEAD_MS);
    await theCluster().killMaster(victim);
    failover = await theCluster().waitForFailover();
    await delay(TAIL_MS);
  } catch (error) {
    await driver.stop();
    throw error;
  }
  const records = await driver.stop();
  const everything = [...seed, ...records];
  const redirects = everything.filter((r) => r.alias !== undefined);

  // Clicks settle while the stack runs (a batch whose flush failed is taken over), then the
  // clean stop's last flush; only then are they read.
  await auditClicks(db(), tenant.appId, redirects, 12_000, 4_000);
  // Every service outlived the failover and stops cleanly (its last flush included), within what
  // the chart gives a pod to terminate (TERMINATION_GRACE_MS).
  const exits = Object.fromEntries(
    await Promise.all(
      stack.list().map(async (p) => [p.name, await p.stop(TERMINATION_GRACE_MS)] as const),
    ),
  );
  const clicks = await auditClicks(db(), tenant.appId, redirects, 1_000, 0);
  const creations = await auditCreations(db(), tenant.appId, everything);
  const answers = auditAnswers(records, { bounds: FAILOVER_BOUNDS });

  const windowEnd = failover.recoveredAt + SETTLE_AFTER_PROMOTION_MS;
  const failed = records.filter((r) => r.status === 0 || r.status >= 500);
  const outsideWindow = failed.filter(
    (r) => r.startedAt + r.durationMs < failover.killedAt || r.startedAt > windowEnd,
  );
  // The bound: clicks answered on the killed master's shards in the flush interval before the
  // kill (what its pending hashes could hold that the replica might not have had yet).
  const atRisk = records.filter(
    (r) =>
      r.status === 302 &&
      r.alias !== undefined &&
      onKilledMaster(r.alias) &&
      r.startedAt + r.durationMs >= failover.killedAt - CLICK_FLUSH_INTERVAL_MS &&
      r.startedAt <= failover.killedAt,
  ).length;
  const malformed = answers.violations.filter(
    (v) => v.includes('unexpected status') || v.includes('without Retry-After'),
  );
  const byClass = (from: number, to: number) =>
    records.filter((r) => r.status >= from && r.status < to).length;
  recordFailover({
    name: scenario.name,
    failover: {
      killedPort: failover.killedPort,
      promotedPort: failover.promotedPort,
      promotionMs: failover.recoveredAt - failover.killedAt,
      killedShards,
      queue: victim === queueMaster,
      counter: victim === counterMaster,
    },
    requests: records.length,
    status: {
      '2xx': byClass(200, 300),
      '3xx': byClass(300, 400),
      '4xx': byClass(400, 500),
      '5xx': byClass(500, 600),
      none: records.filter((r) => r.status === 0).length,
    },
    errorsOutsideWindow: outsideWindow.length,
    errors: describeErrors(failed, failover.killedAt),
    malformed,
    exits: Object.entries(exits)
      .map(([name, exit]) => `${name} ${exit?.code ?? exit?.signal ?? '?'}`)
      .join(', '),
    redirectsOnKilledShards: records.filter((r) => r.alias !== undefined && onKilledMaster(r.alias))
      .length,
    worst: `${answers.worstMs} ms (${answers.worstKind ?? '-'})`,
    clicks: {
      answered: clicks.expected,
      counted: clicks.counted,
      lost: clicks.lost,
      overCounted: clicks.overCounted,
      bound: atRisk,
    },
    creations,
  });

  // A service that did not stop cleanly shows the end of its log with its exit.
  const stopped = Object.fromEntries(
    stack.list().map((p) => {
      const exit = exits[p.name];
      const clean = exit?.code === 0 && exit.signal === null;
      return [p.name, clean ? exit : { ...exit, log: p.output().slice(-6_000) }] as const;
    }),
  );
  expect(stopped).toEqual({
    gateway: { code: 0, signal: null },
    worker: { code: 0, signal: null },
    redirect: { code: 0, signal: null },
  });
  expect(outsideWindow).toEqual([]);
  // Errors are 503 with Retry-After (or no answer in time), never a 500 or a wrong status.
  expect(malformed).toEqual([]);
  expect(creations.lost).toBe(0);
  expect(creations.duplicated).toBe(0);
  expect(creations.unknown).toBe(0);
  expect(clicks.overCounted).toBe(0);
  expect(clicks.lost).toBeLessThanOrEqual(atRisk);
}

describe('a master failover under load', () => {
  afterAll(() => {
    writeClusterReport(Date.now() - suiteStartedAt);
  });

  it('loses only what the docs say it may: the master of the creation queue and link host shards', async () => {
    await runFailover({
      name: 'queue + shards master',
      victim: (masters) => masters.queue,
    });
  });

  it('loses only what the docs say it may: a master of link host shards only', async () => {
    await runFailover({
      name: 'shards-only master',
      // A master that still has a replica (the one promoted above has none), holding neither
      // the queue nor the app's creation counter: of the two such masters, one at least.
      victim: async (masters) => {
        const withReplica = (await theCluster().slots())
          .filter((range) => range.replicaPorts.length > 0)
          .map((range) => range.masterPort);
        const port = withReplica.find((p) => p !== masters.queue && p !== masters.counter);
        if (port === undefined) throw new Error('no master with a replica and no creation key');
        return port;
      },
    });
  });
});

/** `create 503 × 4, batch 503 × 2; from +150 to +3200 ms after the kill`. */
function describeErrors(failed: readonly RequestRecord[], killedAt: number): string {
  if (failed.length === 0) return 'none';
  const counts = new Map<string, number>();
  for (const r of failed) {
    const what = `${r.kind} ${r.status === 0 ? (r.error ?? 'no answer') : r.status}`;
    counts.set(what, (counts.get(what) ?? 0) + 1);
  }
  const starts = failed.map((r) => r.startedAt - killedAt);
  const ends = failed.map((r) => r.startedAt + r.durationMs - killedAt);
  return `${[...counts].map(([what, n]) => `${what} × ${n}`).join(', ')}; started from ${signed(Math.min(...starts))} ms to +${Math.max(...starts)} ms, answered by +${Math.max(...ends)} ms after the kill`;
}

function signed(ms: number): string {
  return ms < 0 ? String(ms) : `+${ms}`;
}
