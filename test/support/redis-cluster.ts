import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { eventually } from '@linkservice/testing';

const run = promisify(execFile);

const SLOTS = 16_384;
/** Spare ports are drawn here; Redis also binds port + 10000 for the cluster bus (up to 40000). */
const PORT_RANGE = { from: 20_000, to: 29_999 };
const BUS_PORT_OFFSET = 10_000;

export interface RedisClusterOptions {
  /** Masters; each gets one replica. Three by default, the smallest cluster Redis allows. */
  masters?: number;
  /**
   * cluster-node-timeout: how long a master may be unreachable before its replica takes over.
   * Short, so a failover under test takes a few seconds, yet long enough that a busy machine's
   * scheduling hiccup is not taken for a dead master.
   */
  nodeTimeoutMs?: number;
}

interface Node {
  port: number;
  child: ChildProcess | undefined;
  exited: Promise<void>;
  output: string;
}

/** One range of slots and the node serving it, as CLUSTER SLOTS tells. */
export interface SlotRange {
  from: number;
  to: number;
  masterPort: number;
  replicaPorts: number[];
}

/** What a failover took: from the kill to a cluster that serves every slot again. */
export interface Failover {
  killedPort: number;
  /** The replica that now serves the killed master's slots. */
  promotedPort: number;
  killedAt: number;
  /** When every live node first said `cluster_state:ok` with every slot on a live master. */
  recoveredAt: number;
}

/**
 * A Redis Cluster of the test's own: `redis-server` children with `cluster-enabled yes` on spare
 * ports of 127.0.0.1 (never the shared Redis on 6379), made with `redis-cli --cluster create`,
 * each master with one replica, no persistence (`--save "" --appendonly no`: what a failover
 * loses is then what the replica had not yet received, nothing a restart could read back).
 * Every file lives in its own temp dir; `stop()` kills every child and removes the dir, and an
 * exit hook kills them if the test process ends first.
 */
export class RedisCluster {
  private readonly nodes: Node[] = [];
  private killed: { port: number; killedAt: number; firstSlot: number } | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'linkservice-redis-cluster-'));
  private readonly killOnExit = () => {
    for (const node of this.nodes) node.child?.kill('SIGKILL');
  };

  private constructor(private readonly nodeTimeoutMs: number) {
    process.once('exit', this.killOnExit);
  }

  /** Starts the servers, makes the cluster and waits until it serves every slot. */
  static async start(options: RedisClusterOptions = {}): Promise<RedisCluster> {
    const masters = options.masters ?? 3;
    const cluster = new RedisCluster(options.nodeTimeoutMs ?? 1_500);
    try {
      const ports = await spareClusterPorts(masters * 2);
      await Promise.all(ports.map((port) => cluster.startNode(port)));
      await cluster.create();
      await cluster.waitUntilServing();
      await cluster.waitForReplicasInSync();
      return cluster;
    } catch (error) {
      const output = cluster.nodes.map((n) => `--- ${n.port} ---\n${n.output}`).join('\n');
      await cluster.stop();
      throw new Error(`the Redis Cluster did not start: ${String(error)}\n${output}`);
    }
  }

  /** `127.0.0.1:<port>,…` of every node still running: the value of REDIS_CLUSTER_NODES. */
  get nodesString(): string {
    return this.liveNodes()
      .map((node) => `127.0.0.1:${node.port}`)
      .join(',');
  }

  /** An ioredis Cluster client for the test's own reads; `disconnect()` it. */
  client(): Cluster {
    const client = new Cluster(
      this.liveNodes().map((node) => ({ host: '127.0.0.1', port: node.port })),
      { redisOptions: { maxRetriesPerRequest: 2 } },
    );
    client.on('error', () => undefined);
    return client;
  }

  /** The slot ranges and who serves them, from a live node's CLUSTER SLOTS. */
  async slots(): Promise<SlotRange[]> {
    const node = this.liveNodes()[0];
    if (!node) throw new Error('no node of the cluster is running');
    return withNode(node.port, async (redis) => {
      const ranges = (await redis.call('CLUSTER', 'SLOTS')) as [
        number,
        number,
        ...[string, number, string][],
      ][];
      return ranges
        .map(([from, to, master, ...replicas]) => ({
          from,
          to,
          masterPort: master[1],
          replicaPorts: replicas.map((replica) => replica[1]),
        }))
        .sort((a, b) => a.from - b.from);
    });
  }

  /** The slot of a key (its hash tag's, when it has one), as the cluster computes it. */
  async slotOf(key: string): Promise<number> {
    const node = this.liveNodes()[0];
    if (!node) throw new Error('no node of the cluster is running');
    return withNode(node.port, async (redis) =>
      Number(await redis.call('CLUSTER', 'KEYSLOT', key)),
    );
  }

  /** The port of the master serving a slot, or a key's slot. */
  async masterOf(slotOrKey: number | string): Promise<number> {
    const slot = typeof slotOrKey === 'number' ? slotOrKey : await this.slotOf(slotOrKey);
    const range = (await this.slots()).find((r) => r.from <= slot && slot <= r.to);
    if (!range) throw new Error(`no master serves slot ${slot}`);
    return range.masterPort;
  }

  /** The ports of the masters serving slots now. */
  async masterPorts(): Promise<number[]> {
    return [...new Set((await this.slots()).map((range) => range.masterPort))];
  }

  /**
   * SIGKILL of a master: no goodbye to its replica or the other nodes, so whatever it had
   * acknowledged but not yet sent to its replica is gone. Answers when the process is gone;
   * `waitForFailover` then waits for its replica to take over.
   */
  async killMaster(port: number): Promise<void> {
    const ranges = (await this.slots()).filter((range) => range.masterPort === port);
    const node = this.nodes.find((n) => n.port === port);
    if (ranges.length === 0) throw new Error(`${port} is not a master`);
    if (!node?.child) throw new Error(`node ${port} is not running`);
    const killedAt = Date.now();
    node.child.kill('SIGKILL');
    await node.exited;
    this.killed = { port, killedAt, firstSlot: ranges[0]!.from };
  }

  /**
   * Waits until the replica of the last killed master was promoted: every live node says
   * `cluster_state:ok` and every slot is served by a live master.
   */
  async waitForFailover(timeoutMs = 30_000): Promise<Failover> {
    const killed = this.killed;
    if (!killed) throw new Error('no master was killed');
    const live = this.liveNodes().map((node) => node.port);
    const promotedPort = await eventually(
      async () => {
        const states = await Promise.all(live.map((port) => clusterState(port)));
        if (states.some((state) => state !== 'ok')) return false;
        const ranges = await this.slots().catch(() => []);
        if (!coversEverySlot(ranges) || ranges.some((r) => !live.includes(r.masterPort))) {
          return false;
        }
        return ranges.find((r) => r.from <= killed.firstSlot && killed.firstSlot <= r.to)
          ?.masterPort;
      },
      {
        timeoutMs,
        intervalMs: 50,
        what: `failover of the master on ${killed.port} (node timeout ${this.nodeTimeoutMs} ms)`,
      },
    );
    return {
      killedPort: killed.port,
      promotedPort,
      killedAt: killed.killedAt,
      recoveredAt: Date.now(),
    };
  }

  /** Kills every server (SIGKILL: nothing to keep) and removes the directory. */
  async stop(): Promise<void> {
    for (const node of this.nodes) node.child?.kill('SIGKILL');
    await Promise.all(this.nodes.map((node) => node.exited));
    process.removeListener('exit', this.killOnExit);
    rmSync(this.dir, { recursive: true, force: true });
  }

  private liveNodes(): Node[] {
    return this.nodes.filter((node) => node.child !== undefined);
  }

  private async startNode(port: number): Promise<void> {
    const nodeDir = join(this.dir, String(port));
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `${nodeDir}.nodes.conf`,
        '--cluster-node-timeout',
        String(this.nodeTimeoutMs),
        '--save',
        '',
        '--appendonly',
        'no',
        '--maxmemory-policy',
        'noeviction',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const node: Node = {
      port,
      child,
      output: '',
      exited: new Promise((resolve) => {
        child.once('exit', () => {
          node.child = undefined;
          resolve();
        });
      }),
    };
    const keep = (chunk: Buffer) => {
      node.output = (node.output + chunk.toString('utf8')).slice(-8 * 1024);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    this.nodes.push(node);
    await eventually(() => ping(port), {
      timeoutMs: 10_000,
      intervalMs: 50,
      what: `redis ${port}`,
    });
  }

  private async create(): Promise<void> {
    await run(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...this.nodes.map((node) => `127.0.0.1:${node.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      { timeout: 60_000 },
    );
  }

  private async waitUntilServing(): Promise<void> {
    await eventually(
      async () => {
        const states = await Promise.all(this.nodes.map((node) => clusterState(node.port)));
        return states.every((state) => state === 'ok') && coversEverySlot(await this.slots());
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'cluster_state:ok on every node' },
    );
  }

  /**
   * Every replica linked to its master and caught up: a failover test that killed a master
   * whose replica had not finished its first sync would measure the sync, not the failover.
   */
  private async waitForReplicasInSync(): Promise<void> {
    await eventually(
      async () => {
        const ranges = await this.slots();
        if (ranges.some((range) => range.replicaPorts.length === 0)) return false;
        const links = await Promise.all(
          ranges.flatMap((range) =>
            range.replicaPorts.map((port) =>
              withNode(port, async (redis) =>
                /master_link_status:up/.test(await redis.info('replication')),
              ),
            ),
          ),
        );
        return links.every(Boolean);
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'every replica in sync' },
    );
  }
}

function coversEverySlot(ranges: readonly SlotRange[]): boolean {
  return ranges.reduce((sum, range) => sum + range.to - range.from + 1, 0) === SLOTS;
}

/** `cluster_state` of one node, or `down` when it does not answer. */
async function clusterState(port: number): Promise<string> {
  try {
    return await withNode(port, async (redis) => {
      const info = String(await redis.call('CLUSTER', 'INFO'));
      return /cluster_state:(\w+)/.exec(info)?.[1] ?? 'unknown';
    });
  } catch {
    return 'down';
  }
}

async function ping(port: number): Promise<boolean> {
  try {
    return await withNode(port, async (redis) => (await redis.ping()) === 'PONG');
  } catch {
    return false;
  }
}

/** One short-lived plain connection to one node (no cluster redirections followed). */
async function withNode<T>(port: number, use: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 1_000,
    commandTimeout: 2_000,
  });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

/**
 * `count` ports of 20000-29999, each free together with its cluster bus port (+10000), drawn at
 * random so parallel runs rarely meet, each checked by binding it a moment.
 */
export async function spareClusterPorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let attempt = 0; ports.length < count; attempt++) {
    if (attempt > 500) throw new Error(`no ${count} spare port pairs in 20000-40000`);
    const port = PORT_RANGE.from + Math.floor(Math.random() * (PORT_RANGE.to - PORT_RANGE.from));
    if (ports.includes(port)) continue;
    if ((await canBind(port)) && (await canBind(port + BUS_PORT_OFFSET))) ports.push(port);
  }
  return ports;
}

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
