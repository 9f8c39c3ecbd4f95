import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { eventually, freePort } from '@linkservice/testing';

/**
 * A redis-server of the fault suite's own, a child of this process on a spare port, configured as
 * the chart and compose configure production: AOF on (`appendfsync everysec`), no eviction, no RDB
 * snapshots. Restarts keep the port and the directory, so the AOF is read back. Only this child is
 * ever signalled; the shared Redis of other runs is never touched.
 */
export class OwnRedis {
  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private output = '';
  private exitHookInstalled = false;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  static async create(): Promise<OwnRedis> {
    const redis = new OwnRedis(
      await freePort(),
      mkdtempSync(join(tmpdir(), 'linkservice-faults-redis-')),
    );
    await redis.start();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(): Promise<void> {
    if (this.child) throw new Error('redis is already running');
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'everysec',
        '--maxmemory-policy',
        'noeviction',
        '--save',
        '',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString('utf8')).slice(-16 * 1024);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    this.child = child;
    this.exited = new Promise((resolve) => {
      child.once('exit', () => {
        if (this.child === child) this.child = undefined;
        resolve();
      });
    });
    if (!this.exitHookInstalled) {
      this.exitHookInstalled = true;
      process.once('exit', () => this.child?.kill('SIGKILL'));
    }
    await eventually(() => this.ping(), {
      timeoutMs: 15_000,
      intervalMs: 50,
      what: `redis on ${this.port} loaded`,
    }).catch((error: unknown) => {
      throw new Error(`${String(error)}\n${this.output}`);
    });
  }

  /** True once the server answers PONG (it answers LOADING while it reads the AOF back). */
  private async ping(): Promise<boolean> {
    const client = new Redis(this.url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 1_000,
      commandTimeout: 1_000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      return true;
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  }

  freeze(): void {
    this.child?.kill('SIGSTOP');
  }

  thaw(): void {
    this.child?.kill('SIGCONT');
  }

  /** SIGTERM: Redis shuts down cleanly, which writes and fsyncs the AOF first. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const exited = this.exited;
    if (!this.child || !exited) return;
    this.child.kill('SIGCONT');
    this.child.kill(signal);
    await exited;
  }

  async remove(): Promise<void> {
    await this.stop('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** A client for the suite's own reads (pending clicks); `quit()` it. */
  client(): Redis {
    const client = new Redis(this.url, { maxRetriesPerRequest: 1 });
    client.on('error', () => undefined);
    return client;
  }
}
