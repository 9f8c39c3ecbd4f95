import { execFile, spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { migrateToLatest } from '@linkservice/db';
import { eventually, freePort } from '@linkservice/testing';

const run = promisify(execFile);

/** Where Debian's postgresql packages put the server binaries; POSTGRES_BIN_DIR overrides it. */
function postgresBinDir(): string {
  const fromEnv = process.env.POSTGRES_BIN_DIR;
  if (fromEnv) return fromEnv;
  return `/usr/lib/postgresql/${process.env.POSTGRES_MAJOR ?? '15'}/bin`;
}

/** Postgres refuses to run as root: every server command runs as this user (`runuser -u`). */
const SERVER_USER = 'postgres';

/**
 * A Postgres cluster of the fault suite's own: `initdb` into a fresh temporary directory, a spare
 * port, trust authentication on 127.0.0.1 only, its socket in the same directory. The suite may
 * freeze, stop and restart it; the shared Postgres of other runs is never touched. `remove()`
 * stops it and deletes the directory (also after a failed run: the suite calls it in afterAll, and
 * a run that dies leaves only a temporary directory and a postmaster on a spare port).
 */
export class OwnPostgres {
  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  static async create(): Promise<OwnPostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'linkservice-faults-pg-'));
    const uid = Number((await run('id', ['-u', SERVER_USER])).stdout.trim());
    const gid = Number((await run('id', ['-g', SERVER_USER])).stdout.trim());
    chownSync(dir, uid, gid);
    const postgres = new OwnPostgres(await freePort(), dir);
    // A run that dies (an interrupted jest, a crash) must not leave a server on a spare port.
    const removeOnExit = () => {
      postgres.removeNow();
    };
    process.once('exit', removeOnExit);
    postgres.cancelExitHook = () => process.off('exit', removeOnExit);
    try {
      await postgres.asServerUser('initdb', [
        '--pgdata',
        postgres.dataDir,
        '--auth',
        'trust',
        '--username',
        'postgres',
        '--encoding',
        'UTF8',
        '--no-sync',
      ]);
      await postgres.start();
    } catch (error) {
      await postgres.remove();
      throw error;
    }
    return postgres;
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  /** The server's own database; services get one made by `createDatabase`. */
  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  /** A new database with every migration applied, as `pnpm start` applies them. */
  async createMigratedDatabase(name: string): Promise<string> {
    const url = this.url(name);
    await migrateToLatest(url);
    return url;
  }

  async start(): Promise<void> {
    await this.pgCtl('start', [
      '--log',
      join(this.dir, 'server.log'),
      '--options',
      // fsync off: the suite tests the services, not the disk; a restart is a clean one anyway.
      `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c fsync=off -c max_connections=200`,
    ]);
  }

  /** `pg_ctl stop -m fast`: every session is ended, the server shuts down cleanly. */
  async stop(): Promise<void> {
    await this.pgCtl('stop', ['--mode', 'fast']);
  }

  /** The postmaster's pid, from the first line of postmaster.pid. */
  async postmasterPid(): Promise<number> {
    const { stdout } = await run('head', ['-n', '1', join(this.dataDir, 'postmaster.pid')]);
    return Number(stdout.trim());
  }

  /**
   * SIGSTOP the postmaster, then every process it forked (backends, checkpointer, walwriter…):
   * the server keeps every connection open and answers nothing, like a stuck host. The postmaster
   * goes first so it forks no new backend in between.
   */
  async freeze(): Promise<void> {
    const postmaster = await this.postmasterPid();
    process.kill(postmaster, 'SIGSTOP');
    for (const child of await childrenOf(postmaster)) signalIfAlive(child, 'SIGSTOP');
  }

  /** SIGCONT every process of the server, children first. */
  async thaw(): Promise<void> {
    const postmaster = await this.postmasterPid();
    for (const child of await childrenOf(postmaster)) signalIfAlive(child, 'SIGCONT');
    process.kill(postmaster, 'SIGCONT');
  }

  private cancelExitHook: () => void = () => undefined;

  /** Synchronous last resort, for process exit: thaw, stop at once, delete. */
  private removeNow(): void {
    try {
      const pid = Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      const children = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' }).stdout;
      for (const child of children.split('\n').filter(Boolean)) {
        signalIfAlive(Number(child), 'SIGCONT');
      }
      process.kill(pid, 'SIGCONT');
    } catch {
      // Not running.
    }
    spawnSync('runuser', [
      '-u',
      SERVER_USER,
      '--',
      join(postgresBinDir(), 'pg_ctl'),
      'stop',
      '--pgdata',
      this.dataDir,
      '--mode',
      'immediate',
      '--silent',
    ]);
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Stops the server if it runs (thawing it first) and deletes its directory. */
  async remove(): Promise<void> {
    this.cancelExitHook();
    try {
      await this.thaw();
    } catch {
      // Not running: nothing to thaw.
    }
    try {
      await this.stop();
    } catch {
      // Not running, or never started.
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Waits until the server accepts connections again (after start or thaw). */
  async waitReady(timeoutMs = 10_000): Promise<void> {
    await eventually(
      async () =>
        run(join(postgresBinDir(), 'pg_isready'), ['-h', '127.0.0.1', '-p', String(this.port)], {
          timeout: 2_000,
        }).then(
          () => true,
          () => false,
        ),
      { timeoutMs, intervalMs: 100, what: `postgres on ${this.port} ready` },
    );
  }

  /** `pg_ctl <action>` on this server's data directory, waiting for it to finish, quietly. */
  private pgCtl(action: 'start' | 'stop', options: string[]): Promise<void> {
    return this.asServerUser('pg_ctl', [
      action,
      '--pgdata',
      this.dataDir,
      '--wait',
      '--silent',
      ...options,
    ]);
  }

  private async asServerUser(command: string, args: string[]): Promise<void> {
    await run('runuser', ['-u', SERVER_USER, '--', join(postgresBinDir(), command), ...args], {
      timeout: 60_000,
    });
  }
}

async function childrenOf(pid: number): Promise<number[]> {
  const { stdout } = await run('pgrep', ['-P', String(pid)]).catch(() => ({ stdout: '' }));
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map(Number);
}

function signalIfAlive(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // The process ended meanwhile.
  }
}
