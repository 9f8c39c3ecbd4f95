import { readFileSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { createDb } from '@linkservice/db';
import { sendRequest } from '@linkservice/testing';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { PERSON_USER_AGENT } from '../faults/load';
import { OwnRedis } from '../faults/own-redis';
import type { ServiceProcess, Stack } from '../support/stack';
import { startStack } from '../support/stack';
import type { Tenant } from '../support/tenants';
import { createTenant } from '../support/tenants';
import type { HttpLoadJob, LoadJob, LoadResult } from './load-protocol';
import { seededAlias } from './seed';
import type { BenchSettings } from './settings';
import { StatementCounter } from './statement-counter';
import type { ClusterLineId, ModeLine } from './cluster-cost';
import { formatClusterCost, measureClusterCost } from './cluster-cost';

/**
 * The bench's scale-out lines (issue 26): throughput of one and of two processes of a service in
 * alternating rounds (1, 2, 1, 2), CPU per operation (the per-core figures), Postgres statements
 * and Redis commands per operation, and Redis memory per cached link. They run on a redis-server
 * of their own (a spare port, removed afterwards): its INFO counts only this stack's commands,
 * memory and CPU, where the shared Redis serves every other run too.
 */

export const SCALING_LINE_IDS = [
  'scale-redirect',
  'scale-resolve',
  'scale-create',
  'per-op-costs',
  'cache-memory',
] as const;
export type ScalingLineId = (typeof SCALING_LINE_IDS)[number];

/** Two rounds of each process count: 1, 2, 1, 2 (the machine drifts; both see the same stretches). */
const SCALE_ROUNDS = 2;
export const SCALING_LIMITS = {
  creationLimitPerHour: 1_000_000_000,
  serviceEnv: { gateway: { SDK_RATE_LIMIT_PER_MINUTE: '1000000000' } },
};

export interface ScalingContext {
  settings: BenchSettings;
  databaseUrl: string;
  linkDomain: string;
  large: Tenant;
  largeLinks: number;
  largePublishableKey: string;
  creator: Tenant;
  selected: readonly ScalingLineId[];
  /** The single-Redis-vs-cluster lines to run (cluster-cost.ts). */
  clusterLines: readonly ClusterLineId[];
  runLoad: (job: LoadJob) => Promise<LoadResult>;
  progress: (message: string) => void;
}

export interface ScaledRound {
  processes: number;
  perSecond: number;
  p50Ms: number;
  errors: number;
  /** CPU of the service's processes per operation, ms (warm-up included, like the other lines). */
  serviceCpuMs: number;
  redisCpuMs: number;
  postgresCpuMs: number;
  /** Commands Redis ran per operation under this load (INFO total_commands_processed; script calls included). */
  redisCommands: number;
}

export interface ScaledLine {
  id: string;
  title: string;
  rounds: ScaledRound[];
}

export interface OperationCost {
  operation: string;
  operations: number;
  postgresStatements: number;
  /** Commands sent by the services (round trips, pipelined or not), scripts counted once. */
  redisCommands: number;
  /** Commands the scripts ran inside Redis (redis.call), per operation. */
  redisScriptCommands: number;
  /** Sent commands by name, per operation. */
  redisByCommand: Record<string, number>;
  /**
   * CPU of the serving processes per operation, one request at a time (so it carries each
   * request's whole fixed cost: compare operations with each other, not with the load lines).
   */
  serviceCpuMs: number;
}

export interface CacheMemory {
  entries: number;
  /** MEMORY USAGE of a cache entry key, mean over a sample, bytes. */
  entryBytes: number;
  /** MEMORY USAGE of a click token key, mean over a sample, bytes (one per counted click). */
  clickTokenBytes: number;
  /** INFO used_memory growth per redirect that filled an entry (entry, token, pending click). */
  usedMemoryPerMissBytes: number;
}

export interface ScalingReport {
  lines: ScaledLine[];
  costs: OperationCost[];
  memory?: CacheMemory;
  /** Single Redis against Redis Cluster (cluster-cost.ts). */
  cluster: ModeLine[];
  idle: { statementsPerSecond: number; redisCommandsPerSecond: number };
}

export async function runScaling(context: ScalingContext): Promise<ScalingReport> {
  const { progress, selected } = context;
  const report: ScalingReport = {
    lines: [],
    costs: [],
    cluster: [],
    idle: { statementsPerSecond: 0, redisCommandsPerSecond: 0 },
  };
  const redis = await OwnRedis.create();
  const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  const db = createDb({ connectionString: context.databaseUrl, max: 2 });
  try {
    const scaled = selected.filter((id) => id.startsWith('scale-'));
    if (scaled.length > 0) {
      progress('scaling: starting two gateways, two workers and two redirects on an own Redis');
      const stacks = await startPair(context, redis.url);
      try {
        const creators = await Promise.all(
          [1, 2].map((n) => createTenant(db.db, { name: `Bench: scaled creations ${n}` })),
        );
        for (const id of scaled) {
          report.lines.push(await measureScaled(context, id, stacks, admin, db.db, creators));
        }
      } finally {
        await Promise.all(stacks.map((stack) => stack.stop()));
      }
    }
    if (selected.includes('per-op-costs') || selected.includes('cache-memory')) {
      await measureCosts(context, redis.url, admin, report);
    }
    if (context.clusterLines.length > 0) {
      report.cluster = await measureClusterCost(context, context.clusterLines, redis.url, db.db);
    }
  } finally {
    admin.disconnect();
    await db.close();
    await redis.remove();
  }
  return report;
}

function startPair(context: ScalingContext, redisUrl: string): Promise<Stack[]> {
  return Promise.all(
    ['a', 'b'].map(() =>
      startStack({
        databaseUrl: context.databaseUrl,
        redisUrl,
        redisPrefix: 'lsscale',
        exactRedisPrefix: true,
        linkDomain: context.linkDomain,
        nodeEnv: 'production',
        logLevel: context.settings.logLevel,
        ...SCALING_LIMITS,
      }),
    ),
  );
}

/** The load of one line, aimed at one process: redirects, resolves or single creations. */
export function lineJob(
  context: ScalingContext,
  id: ScalingLineId,
  origin: string,
  creator: Tenant,
): HttpLoadJob {
  const { settings, large } = context;
  const sample = (count: number) =>
    Array.from({ length: count }, () => 1 + Math.floor(Math.random() * context.largeLinks));
  const base = {
    kind: 'http' as const,
    origin,
    connections: settings.connections,
    durationSeconds: settings.durationSeconds / SCALE_ROUNDS,
    warmupSeconds: settings.warmupSeconds,
  };
  const linkHost = `${large.subdomainKey}.${context.linkDomain}`;
  switch (id) {
    case 'scale-redirect':
      return {
        ...base,
        method: 'GET',
        paths: sample(1_000).map((n) => `/${seededAlias(n)}`),
        headers: { host: linkHost },
        expectStatus: 302,
      };
    case 'scale-resolve':
      return {
        ...base,
        method: 'POST',
        paths: ['/api/v1/sdk/resolve'],
        headers: {
          authorization: `Bearer ${context.largePublishableKey}`,
          'content-type': 'application/json',
        },
        bodies: sample(1_000).map((n) =>
          JSON.stringify({ url: `https://${linkHost}/${seededAlias(n)}?utm_source=bench` }),
        ),
        expectStatus: 200,
      };
    default:
      return {
        ...base,
        method: 'POST',
        paths: ['/api/v1/links'],
        headers: {
          authorization: `Bearer ${creator.live.secret}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({
          webFallbackUrl: 'https://example.com/landing',
          title: 'Bench link',
          campaign: 'bench',
          tags: ['bench', 'load'],
          deepLinkData: { screen: 'product', productId: 42 },
        }),
        expectStatus: 201,
      };
  }
}

const TITLES: Record<string, string> = {
  'scale-redirect': 'redirect (cached), 1 vs 2 redirect processes',
  'scale-resolve': 'POST /sdk/resolve, 1 vs 2 gateway processes',
  'scale-create': 'POST /links, 1 vs 2 gateway + worker processes',
};

async function measureScaled(
  context: ScalingContext,
  id: ScalingLineId,
  stacks: Stack[],
  admin: Redis,
  db: Parameters<typeof postgresCpuSeconds>[0],
  creators: readonly Tenant[],
): Promise<ScaledLine> {
  const service = id === 'scale-redirect' ? 'redirect' : 'gateway';
  const line: ScaledLine = { id, title: TITLES[id] ?? id, rounds: [] };
  for (let round = 0; round < SCALE_ROUNDS * 2; round++) {
    const processes = (round % 2) + 1;
    // One creating process is a gateway and a worker: the second worker must not help it.
    if (id === 'scale-create') await setRunning(stacks[1]!.worker, processes === 2);
    // Always two load runners of half the connections (the load generator costs the same in
    // every round), each creating for an app of its own: one app's creations queue on its row
    // lock whatever the replica count (docs/operations.md), so one app would measure that lock.
    const answering = [0, 1].map((n) => stacks[n % processes]!.service(service));
    const measured = [
      ...stacks.map((stack) => stack.service(service)),
      ...(id === 'scale-create' ? stacks.map((stack) => stack.worker) : []),
    ];
    context.progress(`${id}: ${processes} process(es), round ${Math.floor(round / 2) + 1}`);
    const cpuBefore = measured.map((p) => p.cpuSeconds() ?? 0);
    const redisBefore = await redisCpuSeconds(admin);
    const postgresBefore = await postgresCpuSeconds(db);
    const commandsBefore = await commandsProcessed(admin);
    // The same connections in all, split over the processes.
    const share = Math.max(1, Math.round(context.settings.connections / answering.length));
    const results = await Promise.all(
      answering.map((process, n) =>
        context.runLoad({
          ...lineJob(context, id, process.url, creators[n]!),
          connections: share,
        }),
      ),
    );
    const cpu = measured.reduce(
      (sum, p, i) => sum + (p.cpuSeconds() ?? 0) - (cpuBefore[i] ?? 0),
      0,
    );
    const redisCpu = (await redisCpuSeconds(admin)) - redisBefore;
    const postgresCpu = cpuGrowth(postgresBefore, await postgresCpuSeconds(db));
    const operations = results.reduce(
      (sum, r) => sum + r.warmupRequests + r.succeeded + r.errors,
      0,
    );
    const perOperation = (seconds: number) => (operations > 0 ? (seconds * 1000) / operations : 0);
    const outcome: ScaledRound = {
      processes,
      perSecond: results.reduce((sum, r) => sum + r.perSecond, 0),
      p50Ms: Math.max(...results.map((r) => r.p50Ms)),
      errors: results.reduce((sum, r) => sum + r.errors, 0),
      serviceCpuMs: perOperation(cpu),
      redisCpuMs: perOperation(redisCpu),
      // A pooled backend that ended within the round takes its CPU with it: never below 0.
      postgresCpuMs: Math.max(0, perOperation(postgresCpu)),
      redisCommands:
        operations > 0 ? ((await commandsProcessed(admin)) - commandsBefore) / operations : 0,
    };
    context.progress(
      `  ${outcome.perSecond.toFixed(0)}/s, p50 ${outcome.p50Ms.toFixed(2)} ms, ` +
        `${outcome.serviceCpuMs.toFixed(3)} ms service CPU per operation, ${outcome.errors} errors`,
    );
    line.rounds.push(outcome);
  }
  if (id === 'scale-create') await setRunning(stacks[1]!.worker, true);
  return line;
}

async function setRunning(process: ServiceProcess, running: boolean): Promise<void> {
  if (running && !process.isRunning) await process.start();
  if (!running && process.isRunning) await process.stop();
}

async function commandsProcessed(redis: Redis): Promise<number> {
  return Number(/^total_commands_processed:(\d+)/m.exec(await redis.info('stats'))?.[1] ?? 0);
}

/** used_cpu_user + used_cpu_sys of the own Redis, seconds. */
export async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) =>
    Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
  return field('used_cpu_user') + field('used_cpu_sys');
}

/**
 * CPU of each Postgres backend serving this database (the services' pooled connections), by pid,
 * from /proc: the bench runs beside the server. A backend that started within a round counts
 * whole; one that ended within it is missed (the pools keep theirs while busy).
 */
async function postgresCpuSeconds(
  db: ReturnType<typeof createDb>['db'],
): Promise<Map<number, number>> {
  const { rows } = await sql<{ pid: number }>`
    SELECT pid FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()`.execute(db);
  const cpu = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      cpu.set(pid, (Number(fields[11]) + Number(fields[12])) / 100);
    } catch {
      // The backend ended meanwhile.
    }
  }
  return cpu;
}

function cpuGrowth(before: Map<number, number>, after: Map<number, number>): number {
  let grown = 0;
  for (const [pid, seconds] of after) grown += seconds - (before.get(pid) ?? 0);
  return grown;
}

/**
 * Every command Redis runs, from MONITOR: a command a client sent is counted by name, one a script
 * ran (source `lua`) as `lua:<name>`. INFO commandstats would not tell the two apart.
 */
class CommandTally {
  readonly calls = new Map<string, number>();

  static async start(redis: Redis): Promise<{ tally: CommandTally; stop: () => void }> {
    const tally = new CommandTally();
    const monitor = await redis.monitor();
    monitor.on('error', () => undefined);
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const name = (args[0] ?? '').toLowerCase();
      const key = source === 'lua' ? `lua:${name}` : name;
      tally.calls.set(key, (tally.calls.get(key) ?? 0) + 1);
    });
    return {
      tally,
      stop: () => {
        monitor.disconnect();
        redis.disconnect();
      },
    };
  }

  snapshot(): Map<string, number> {
    return new Map(this.calls);
  }
}

/** Commands that are the measurement itself, never the operation's. */
const OWN_COMMANDS = new Set(['info', 'scan', 'memory', 'monitor']);

/**
 * Postgres statements and Redis commands per operation, on a stack of one process each whose
 * Postgres connections go through a StatementCounter: a fixed number of each operation one after
 * another, minus the idle rate (the workers' blocking reads, the click flusher) over the same time.
 */
async function measureCosts(
  context: ScalingContext,
  redisUrl: string,
  admin: Redis,
  report: ScalingReport,
): Promise<void> {
  const { progress } = context;
  const target = new URL(context.databaseUrl);
  const counter = await StatementCounter.start({
    host: target.hostname,
    port: Number(target.port || 5432),
  });
  const proxied = new URL(context.databaseUrl);
  proxied.port = String(counter.port);
  const prefix = 'lscost';
  progress(
    'per-operation costs: one process of each service, Postgres through a statement counter',
  );
  const stack = await startStack({
    databaseUrl: proxied.toString(),
    redisUrl,
    redisPrefix: prefix,
    exactRedisPrefix: true,
    linkDomain: context.linkDomain,
    nodeEnv: 'production',
    logLevel: context.settings.logLevel,
    ...SCALING_LIMITS,
  });
  const monitored = admin.duplicate();
  monitored.on('error', () => undefined);
  const { tally, stop: stopTally } = await CommandTally.start(monitored);
  try {
    const snapshot = async () => {
      // MONITOR lines arrive a moment after the commands: let the last ones in.
      await delay(100);
      return { at: Date.now(), statements: counter.statements, commands: tally.snapshot() };
    };
    // Idle first: what the stack sends with nothing to do.
    await delay(2_000);
    const idleStart = await snapshot();
    await delay(4_000);
    const idleEnd = await snapshot();
    const idleSeconds = (idleEnd.at - idleStart.at) / 1000;
    const idleCommands = difference(idleStart.commands, idleEnd.commands);
    report.idle = {
      statementsPerSecond: (idleEnd.statements - idleStart.statements) / idleSeconds,
      redisCommandsPerSecond:
        total(new Map([...idleCommands].filter(([name]) => !name.startsWith('lua:')))) /
        idleSeconds,
    };

    const linkHost = `${context.large.subdomainKey}.${context.linkDomain}`;
    // Aliases of the large app no redirect of this stack has followed yet (its own Redis prefix).
    const aliases = Array.from({ length: 2_000 }, (_, n) =>
      seededAlias(1 + ((n * 3_331) % context.largeLinks)),
    );
    const follow = (alias: string) =>
      sendRequest(`${stack.redirect.url}/${alias}`, {
        host: linkHost,
        headers: { 'user-agent': PERSON_USER_AGENT },
      });
    const api = (path: string, key: string, body: unknown) =>
      sendRequest(`${stack.apiUrl}${path}`, { method: 'POST', key, body });
    const entry = (n: number) => ({
      webFallbackUrl: `https://example.com/landing/${n}`,
      title: 'Bench link',
      campaign: 'bench',
      tags: ['bench', 'load'],
      deepLinkData: { screen: 'product', productId: n },
    });

    const operations: {
      name: string;
      count: number;
      /** The processes whose CPU the operation costs. */
      services: ServiceProcess[];
      run: (n: number) => Promise<unknown>;
    }[] = [
      {
        name: 'redirect, cache miss',
        count: aliases.length,
        services: [stack.redirect],
        run: (n) => follow(aliases[n]!),
      },
      {
        name: 'redirect, cached',
        count: aliases.length,
        services: [stack.redirect],
        run: (n) => follow(aliases[n]!),
      },
      {
        name: 'resolve (POST /sdk/resolve)',
        count: 1_000,
        services: [stack.gateway],
        run: (n) =>
          api('/sdk/resolve', context.largePublishableKey, {
            url: `https://${linkHost}/${aliases[n % aliases.length]!}`,
          }),
      },
      {
        name: 'creation, single',
        count: 200,
        services: [stack.gateway, stack.worker],
        run: (n) => api('/links', context.creator.live.secret, entry(n)),
      },
      {
        name: 'creation, batch of 100',
        count: 20,
        services: [stack.gateway, stack.worker],
        run: (n) =>
          api('/links/batch', context.creator.live.secret, {
            links: Array.from({ length: 100 }, (_, e) => entry(n * 100 + e)),
          }),
      },
    ];
    if (context.selected.includes('per-op-costs')) {
      for (const operation of operations) {
        const before = await snapshot();
        const cpuBefore = operation.services.map((p) => p.cpuSeconds() ?? 0);
        for (let n = 0; n < operation.count; n++) {
          const res = (await operation.run(n)) as { status: number };
          if (res.status >= 300 && res.status !== 302) {
            throw new Error(`${operation.name}: HTTP ${res.status}`);
          }
        }
        const cpu = operation.services.reduce(
          (sum, p, i) => sum + (p.cpuSeconds() ?? 0) - (cpuBefore[i] ?? 0),
          0,
        );
        // Clicks reach Postgres at the next flush: wait one flush interval (1 s) and some.
        if (operation.name.startsWith('redirect')) await delay(1_500);
        const after = await snapshot();
        const seconds = (after.at - before.at) / 1000;
        const commands = difference(before.commands, after.commands);
        for (const [name, idleCalls] of idleCommands) {
          commands.set(name, (commands.get(name) ?? 0) - (idleCalls / idleSeconds) * seconds);
        }
        const byCommand: Record<string, number> = {};
        let sent = 0;
        let inScripts = 0;
        for (const [name, calls] of [...commands].sort((a, b) => b[1] - a[1])) {
          if (name.startsWith('lua:')) {
            inScripts += calls;
            continue;
          }
          sent += calls;
          const per = calls / operation.count;
          if (per >= 0.05) byCommand[name] = round2(per);
        }
        const statements =
          after.statements - before.statements - report.idle.statementsPerSecond * seconds;
        const cost: OperationCost = {
          operation: operation.name,
          operations: operation.count,
          postgresStatements: round2(statements / operation.count),
          redisCommands: round2(sent / operation.count),
          redisScriptCommands: round2(inScripts / operation.count),
          redisByCommand: byCommand,
          serviceCpuMs: round3((cpu * 1000) / operation.count),
        };
        progress(
          `  ${operation.name}: ${cost.postgresStatements} statements, ${cost.redisCommands} Redis commands`,
        );
        report.costs.push(cost);
      }
    }
    if (context.selected.includes('cache-memory')) {
      report.memory = await measureCacheMemory(context, admin, prefix, (alias) => follow(alias));
    }
  } finally {
    stopTally();
    await stack.stop();
    await counter.close();
  }
}

/**
 * Fills cache entries through real redirects of never-followed aliases (the link host's own fill
 * path), then reads MEMORY USAGE of a sample of entry and click-token keys and the growth of
 * used_memory per redirect.
 */
async function measureCacheMemory(
  context: ScalingContext,
  admin: Redis,
  prefix: string,
  follow: (alias: string) => Promise<unknown>,
): Promise<CacheMemory> {
  const count = Math.min(10_000, context.largeLinks - 1_000);
  const offset = 500;
  context.progress(`cache memory: ${count} redirects of links not yet cached`);
  const usedMemory = async () =>
    Number(/^used_memory:(\d+)/m.exec(await admin.info('memory'))?.[1] ?? 0);
  const before = await usedMemory();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        const n = next++;
        // Far from the costs' aliases (every 3,331st link), so each fills a new entry.
        await follow(seededAlias(offset + 1 + ((n * 7) % (context.largeLinks - offset - 1))));
      }
    }),
  );
  const after = await usedMemory();
  const sampleOf = async (pattern: string) => {
    const [, keys] = await admin.scan('0', 'MATCH', pattern, 'COUNT', 5_000);
    const sizes = await Promise.all(
      keys.slice(0, 200).map(async (key) => Number(await admin.memory('USAGE', key))),
    );
    return sizes.length ? sizes.reduce((sum, n) => sum + n, 0) / sizes.length : 0;
  };
  return {
    entries: count,
    entryBytes: Math.round(await sampleOf(`${prefix}:link-cache:*`)),
    clickTokenBytes: Math.round(await sampleOf(`${prefix}:click-token:*`)),
    usedMemoryPerMissBytes: Math.round((after - before) / count),
  };
}

function difference(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [name, calls] of after) {
    if (OWN_COMMANDS.has(name)) continue;
    const grown = calls - (before.get(name) ?? 0);
    if (grown !== 0) delta.set(name, grown);
  }
  return delta;
}

function total(commands: Map<string, number>): number {
  let sum = 0;
  for (const calls of commands.values()) sum += calls;
  return sum;
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

/** The scale-out part of the printed report. */
export function formatScaling(report: ScalingReport, cores: number): string {
  const lines: string[] = [];
  for (const line of report.lines) {
    const mean = (processes: number, pick: (r: ScaledRound) => number) => {
      const rounds = line.rounds.filter((r) => r.processes === processes);
      return rounds.reduce((sum, r) => sum + pick(r), 0) / Math.max(1, rounds.length);
    };
    const one = mean(1, (r) => r.perSecond);
    const two = mean(2, (r) => r.perSecond);
    const rounds = line.rounds.map((r) => `${r.processes}: ${r.perSecond.toFixed(0)}/s`).join(', ');
    lines.push(
      `${line.id}: ${line.title}: 1 process ${one.toFixed(0)}/s, 2 processes ${two.toFixed(0)}/s, ` +
        `ratio ${(two / one).toFixed(2)} (rounds ${rounds}; ${cores} cores shared with the load ` +
        'generator, Postgres and Redis)',
    );
    const serviceCpu = mean(1, (r) => r.serviceCpuMs);
    const redisCpu = mean(1, (r) => r.redisCpuMs);
    const postgresCpu = mean(1, (r) => r.postgresCpuMs);
    lines.push(
      `  per core: ${(1000 / serviceCpu).toFixed(0)}/s per core of the service ` +
        `(${serviceCpu.toFixed(3)} ms CPU each); Redis ${redisCpu.toFixed(3)} ms, ` +
        `Postgres backends ${postgresCpu.toFixed(3)} ms CPU each; all three: ` +
        `${(1000 / (serviceCpu + redisCpu + postgresCpu)).toFixed(0)}/s per core; ` +
        `Redis ran ${mean(1, (r) => r.redisCommands).toFixed(1)} commands each under this load`,
    );
  }
  if (report.costs.length > 0) {
    lines.push(
      `per operation (idle stack: ${report.idle.statementsPerSecond.toFixed(1)} statements/s, ` +
        `${report.idle.redisCommandsPerSecond.toFixed(1)} Redis commands/s, subtracted):`,
    );
    lines.push(
      '| operation | service CPU, one at a time | Postgres statements | Redis commands sent | run inside scripts | sent, by name |',
    );
    lines.push('| --- | --- | --- | --- | --- | --- |');
    for (const cost of report.costs) {
      const names = Object.entries(cost.redisByCommand)
        .map(([name, per]) => `${name} ${per}`)
        .join(', ');
      lines.push(
        `| ${cost.operation} | ${cost.serviceCpuMs} ms | ${cost.postgresStatements} | ${cost.redisCommands} | ${cost.redisScriptCommands} | ${names} |`,
      );
    }
  }
  if (report.cluster.length > 0) lines.push(formatClusterCost(report.cluster));
  if (report.memory) {
    const m = report.memory;
    const perMillion = (bytes: number) => `${((bytes * 1e6) / 2 ** 20).toFixed(0)} MiB`;
    lines.push(
      `cache memory (${m.entries} entries filled by redirects): entry key ${m.entryBytes} B ` +
        `(${perMillion(m.entryBytes)} per million cached links), click token ${m.clickTokenBytes} B ` +
        `(${perMillion(m.clickTokenBytes)} per million clicks within the token TTL), used_memory ` +
        `+${m.usedMemoryPerMissBytes} B per first redirect (${perMillion(m.usedMemoryPerMissBytes)} per million)`,
    );
  }
  return lines.join('\n');
}
