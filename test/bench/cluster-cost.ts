import type { Tenant } from '../support/tenants';
import { createTenant } from '../support/tenants';
import { RedisCluster } from '../support/redis-cluster';
import type { Stack } from '../support/stack';
import { startStack } from '../support/stack';
import { Redis } from 'ioredis';
import type { createDb } from '@linkservice/db';
import type { ScalingContext, ScalingLineId } from './scaling';
import { lineJob, redisCpuSeconds, SCALING_LIMITS } from './scaling';

/**
 * The cost of Redis Cluster mode (issue 26): the same service on a single Redis and on a local
 * Redis Cluster (three masters, three replicas), in alternating rounds (single, cluster, single,
 * cluster), with the same load: cached redirects, and single creations (gateway and worker).
 * Per round: throughput, p50, the service's CPU per operation and Redis' (the single server's,
 * or the three masters' together; the replicas' replication work is left out).
 */

export const CLUSTER_LINE_IDS = ['cluster-redirect', 'cluster-create'] as const;
export type ClusterLineId = (typeof CLUSTER_LINE_IDS)[number];

export type RedisMode = 'single' | 'cluster';

export interface ModeRound {
  mode: RedisMode;
  perSecond: number;
  p50Ms: number;
  errors: number;
  serviceCpuMs: number;
  redisCpuMs: number;
}

export interface ModeLine {
  id: ClusterLineId;
  title: string;
  rounds: ModeRound[];
}

const ROUNDS_PER_MODE = 2;

const SCALED_LOAD: Record<ClusterLineId, ScalingLineId> = {
  'cluster-redirect': 'scale-redirect',
  'cluster-create': 'scale-create',
};

const TITLES: Record<ClusterLineId, string> = {
  'cluster-redirect': 'redirect (cached), single Redis vs Redis Cluster',
  'cluster-create': 'POST /links (gateway + worker), single Redis vs Redis Cluster',
};

/**
 * Runs the selected lines: one stack on `singleRedisUrl` (the scaling lines' own Redis) and one
 * on a cluster started here, both on the bench's database, under prefixes of their own.
 */
export async function measureClusterCost(
  context: ScalingContext,
  selected: readonly ClusterLineId[],
  singleRedisUrl: string,
  db: ReturnType<typeof createDb>['db'],
): Promise<ModeLine[]> {
  context.progress('cluster cost: starting a local Redis Cluster and a stack on it');
  const cluster = await RedisCluster.start();
  const stacks: Partial<Record<RedisMode, Stack>> = {};
  const single = new Redis(singleRedisUrl, { maxRetriesPerRequest: 1 });
  single.on('error', () => undefined);
  const masters: Redis[] = [];
  try {
    const start = (mode: RedisMode) =>
      startStack({
        databaseUrl: context.databaseUrl,
        redisUrl: singleRedisUrl,
        ...(mode === 'cluster' && { redisClusterNodes: cluster.nodesString }),
        redisPrefix: `lscost-${mode}`,
        exactRedisPrefix: true,
        linkDomain: context.linkDomain,
        nodeEnv: 'production',
        logLevel: context.settings.logLevel,
        ...SCALING_LIMITS,
      });
    [stacks.single, stacks.cluster] = await Promise.all([start('single'), start('cluster')]);
    for (const port of await cluster.masterPorts()) {
      const master = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
      master.on('error', () => undefined);
      masters.push(master);
    }
    const redisCpu = {
      single: () => redisCpuSeconds(single),
      cluster: async () =>
        (await Promise.all(masters.map((master) => redisCpuSeconds(master)))).reduce(
          (sum, seconds) => sum + seconds,
          0,
        ),
    };
    const creators = {
      single: await createTenant(db, { name: 'Bench: single-Redis creations' }),
      cluster: await createTenant(db, { name: 'Bench: cluster creations' }),
    };
    const lines: ModeLine[] = [];
    for (const id of selected) {
      const line: ModeLine = { id, title: TITLES[id], rounds: [] };
      for (let round = 0; round < ROUNDS_PER_MODE * 2; round++) {
        const mode: RedisMode = round % 2 === 0 ? 'single' : 'cluster';
        const stack = stacks[mode]!;
        line.rounds.push(
          await measureRound(context, id, mode, stack, creators[mode], redisCpu[mode]),
        );
      }
      lines.push(line);
    }
    return lines;
  } finally {
    await Promise.all(Object.values(stacks).map((stack) => stack.stop()));
    for (const master of masters) master.disconnect();
    single.disconnect();
    await cluster.stop();
  }
}

async function measureRound(
  context: ScalingContext,
  id: ClusterLineId,
  mode: RedisMode,
  stack: Stack,
  creator: Tenant,
  redisCpu: () => Promise<number>,
): Promise<ModeRound> {
  const creating = id === 'cluster-create';
  const serving = stack.service(creating ? 'gateway' : 'redirect');
  const measured = creating ? [serving, stack.worker] : [serving];
  context.progress(`${id}: ${mode}`);
  const cpuBefore = measured.map((p) => p.cpuSeconds() ?? 0);
  const redisBefore = await redisCpu();
  const result = await context.runLoad({
    ...lineJob(context, SCALED_LOAD[id], serving.url, creator),
    durationSeconds: context.settings.durationSeconds / ROUNDS_PER_MODE,
  });
  const cpu = measured.reduce((sum, p, i) => sum + (p.cpuSeconds() ?? 0) - (cpuBefore[i] ?? 0), 0);
  const redisSeconds = (await redisCpu()) - redisBefore;
  const operations = result.warmupRequests + result.succeeded + result.errors;
  const perOperation = (seconds: number) => (operations > 0 ? (seconds * 1000) / operations : 0);
  const outcome: ModeRound = {
    mode,
    perSecond: result.perSecond,
    p50Ms: result.p50Ms,
    errors: result.errors,
    serviceCpuMs: perOperation(cpu),
    redisCpuMs: perOperation(redisSeconds),
  };
  context.progress(
    `  ${outcome.perSecond.toFixed(0)}/s, p50 ${outcome.p50Ms.toFixed(2)} ms, ` +
      `${outcome.serviceCpuMs.toFixed(3)} ms service CPU and ${outcome.redisCpuMs.toFixed(3)} ms ` +
      `Redis CPU per operation, ${outcome.errors} errors`,
  );
  return outcome;
}

/** The cluster-cost part of the printed report. */
export function formatClusterCost(lines: readonly ModeLine[]): string {
  const out: string[] = [];
  for (const line of lines) {
    const mean = (mode: RedisMode, pick: (r: ModeRound) => number) => {
      const rounds = line.rounds.filter((r) => r.mode === mode);
      return rounds.reduce((sum, r) => sum + pick(r), 0) / Math.max(1, rounds.length);
    };
    const rounds = line.rounds.map((r) => `${r.mode} ${r.perSecond.toFixed(0)}/s`).join(', ');
    const service = (mode: RedisMode) => mean(mode, (r) => r.serviceCpuMs);
    const redis = (mode: RedisMode) => mean(mode, (r) => r.redisCpuMs);
    out.push(
      `${line.id}: ${line.title}: single ${mean('single', (r) => r.perSecond).toFixed(0)}/s, ` +
        `cluster ${mean('cluster', (r) => r.perSecond).toFixed(0)}/s, ratio ` +
        `${(mean('cluster', (r) => r.perSecond) / mean('single', (r) => r.perSecond)).toFixed(2)} ` +
        `(rounds ${rounds}); p50 ${mean('single', (r) => r.p50Ms).toFixed(2)} vs ` +
        `${mean('cluster', (r) => r.p50Ms).toFixed(2)} ms`,
    );
    out.push(
      `  cost of cluster mode per operation: service CPU ${service('single').toFixed(3)} -> ` +
        `${service('cluster').toFixed(3)} ms (${signed(service('cluster') - service('single'))} ms), ` +
        `Redis CPU (masters) ${redis('single').toFixed(3)} -> ${redis('cluster').toFixed(3)} ms ` +
        `(${signed(redis('cluster') - redis('single'))} ms)`,
    );
  }
  return out.join('\n');
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : ''}${value.toFixed(3)}`;
}
