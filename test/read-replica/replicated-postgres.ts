import { execFile, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { eventually, freePort } from '@linkservice/testing';

const run = promisify(execFile);

/** Where Debian's postgresql packages put the server binaries; POSTGRES_BIN_DIR overrides it. */
function postgresBinDir(): string {
  return (
    process.env.POSTGRES_BIN_DIR ?? `/usr/lib/postgresql/${process.env.POSTGRES_MAJOR ?? '15'}/bin`
  );
}

const PGBOUNCER = process.env.PGBOUNCER_BIN ?? '/usr/sbin/pgbouncer';

/** Postgres and PgBouncer refuse to run as root: servers run as this user. */
const SERVER_USER = 'postgres';

/**
 * What every statement of a server is logged with: `log_line_prefix` gives the session's
 * application_name first, so the tier tells the services' statements (linkservice-*) apart from
 * its own and the migrator's.
 */
const LOGGING = [
  "log_statement = 'all'",
  "log_line_prefix = '%a|'",
  // One log file the tier reads, beside the data directory.
  'logging_collector = off',
];

/**
 * A primary, a streaming replica of it that applies every transaction `applyDelay` late
 * (`recovery_min_apply_delay`), and a PgBouncer in transaction mode in front of both, all of the
 * tier's own: one temporary directory, spare ports, trust on 127.0.0.1. Through PgBouncer the
 * database `primary` reaches the primary and `replica` the replica; `directUrl` bypasses it
 * (migrations: Kysely's migration lock is a session lock). `remove()` stops every server and
 * deletes the directory, also when setting up failed part way; a run that dies stops them on exit.
 */
export class ReplicatedPostgres {
  private readonly primaryPort: number;
  private readonly replicaPort: number;
  private readonly bouncerPort: number;
  private cancelExitHook: () => void = () => undefined;

  private constructor(
    private readonly dir: string,
    ports: [number, number, number],
    readonly database: string,
  ) {
    [this.primaryPort, this.replicaPort, this.bouncerPort] = ports;
  }

  static async create({
    database,
    applyDelay,
  }: {
    database: string;
    applyDelay: string;
  }): Promise<ReplicatedPostgres> {
    const dir = mkdtempSync(join(tmpdir(), 'linkservice-replica-'));
    const uid = Number((await run('id', ['-u', SERVER_USER])).stdout.trim());
    const gid = Number((await run('id', ['-g', SERVER_USER])).stdout.trim());
    chownSync(dir, uid, gid);
    const servers = new ReplicatedPostgres(
      dir,
      [await freePort(), await freePort(), await freePort()],
      database,
    );
    const removeOnExit = () => {
      servers.removeNow();
    };
    process.once('exit', removeOnExit);
    servers.cancelExitHook = () => process.off('exit', removeOnExit);
    try {
      await servers.startPrimary();
      await servers.asServerUser(join(postgresBinDir(), 'psql'), [
        '-h',
        '127.0.0.1',
        '-p',
        String(servers.primaryPort),
        '-U',
        'postgres',
        '-d',
        'postgres',
        '-qc',
        `CREATE DATABASE ${database}`,
      ]);
      await servers.startReplica(applyDelay);
      await servers.startBouncer(uid, gid);
    } catch (error) {
      await servers.remove();
      throw error;
    }
    return servers;
  }

  private get primaryData(): string {
    return join(this.dir, 'primary');
  }

  private get replicaData(): string {
    return join(this.dir, 'replica');
  }

  /** The primary, bypassing PgBouncer: migrations and the tier's own setup. */
  get directUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.primaryPort}/${this.database}`;
  }

  /** The replica, bypassing PgBouncer: what the replica has applied so far. */
  get directReplicaUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.replicaPort}/${this.database}`;
  }

  /** The services' DATABASE_URL: the primary through PgBouncer. */
  get bouncerPrimaryUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.bouncerPort}/primary`;
  }

  /** The services' DATABASE_READ_URL: the replica through PgBouncer. */
  get bouncerReplicaUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.bouncerPort}/replica`;
  }

  /** PgBouncer's admin console (SHOW POOLS, SHOW SERVERS…). */
  get bouncerAdminUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.bouncerPort}/pgbouncer`;
  }

  /** Every statement the primary (`primary`) or the replica logged, one per line. */
  serverLog(server: 'primary' | 'replica'): string {
    const file = join(this.dir, `${server}.log`);
    return existsSync(file) ? readFileSync(file, 'utf8') : '';
  }

  private async startPrimary(): Promise<void> {
    await this.asServerUser(join(postgresBinDir(), 'initdb'), [
      '--pgdata',
      this.primaryData,
      '--auth',
      'trust',
      '--username',
      'postgres',
      '--encoding',
      'UTF8',
      '--no-sync',
    ]);
    // initdb's pg_hba.conf with --auth trust already lets 127.0.0.1 replicate.
    appendFileSync(
      join(this.primaryData, 'postgresql.conf'),
      ['wal_level = replica', 'max_wal_senders = 4', 'fsync = off', ...LOGGING, ''].join('\n'),
    );
    await this.pgCtl(this.primaryData, 'primary', this.primaryPort);
  }

  private async startReplica(applyDelay: string): Promise<void> {
    mkdirSync(this.replicaData, { mode: 0o700 });
    chownSync(this.replicaData, ...(await this.serverIds()));
    // -R: standby.signal and primary_conninfo; -X stream: the WAL of the copy itself.
    await this.asServerUser(join(postgresBinDir(), 'pg_basebackup'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(this.primaryPort),
      '-U',
      'postgres',
      '-D',
      this.replicaData,
      '-R',
      '-X',
      'stream',
      '--no-sync',
      // Without it the copy waits for a spread checkpoint (minutes on an idle server).
      '--checkpoint=fast',
    ]);
    appendFileSync(
      join(this.replicaData, 'postgresql.auto.conf'),
      `recovery_min_apply_delay = '${applyDelay}'\n`,
    );
    await this.pgCtl(this.replicaData, 'replica', this.replicaPort);
  }

  private async startBouncer(uid: number, gid: number): Promise<void> {
    const users = join(this.dir, 'users.txt');
    writeFileSync(users, '"postgres" ""\n');
    const ini = join(this.dir, 'pgbouncer.ini');
    writeFileSync(
      ini,
      [
        '[databases]',
        `primary = host=127.0.0.1 port=${this.primaryPort} dbname=${this.database}`,
        `replica = host=127.0.0.1 port=${this.replicaPort} dbname=${this.database}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${this.bouncerPort}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${users}`,
        'admin_users = postgres',
        // Transaction pooling, and few server connections for many clients: a statement name,
        // a session SET or a session lock would be met by another client's transaction.
        'pool_mode = transaction',
        'default_pool_size = 3',
        'max_client_conn = 500',
        // No ignore_startup_parameters: a service sending statement_timeout (or anything
        // PgBouncer does not track) at connect is refused, as in production.
        `logfile = ${join(this.dir, 'pgbouncer.log')}`,
        `pidfile = ${join(this.dir, 'pgbouncer.pid')}`,
        '',
      ].join('\n'),
    );
    for (const file of [users, ini]) chownSync(file, uid, gid);
    // -d: a daemon, found again by its pid file; -u: drops root for the server user.
    await run(PGBOUNCER, ['-d', '-u', SERVER_USER, ini], { timeout: 10_000 });
    await eventually(
      async () =>
        run(
          join(postgresBinDir(), 'pg_isready'),
          ['-h', '127.0.0.1', '-p', String(this.bouncerPort), '-d', 'primary'],
          { timeout: 2_000 },
        ).then(
          () => true,
          () => false,
        ),
      { timeoutMs: 10_000, intervalMs: 100, what: `pgbouncer on ${this.bouncerPort}` },
    );
  }

  /** Stops PgBouncer and both servers and deletes the directory. */
  async remove(): Promise<void> {
    this.cancelExitHook();
    this.removeNow();
    await Promise.resolve();
  }

  private removeNow(): void {
    const pidFile = join(this.dir, 'pgbouncer.pid');
    if (existsSync(pidFile)) {
      const pid = Number(readFileSync(pidFile, 'utf8').trim());
      try {
        // SIGINT: PgBouncer's immediate shutdown.
        process.kill(pid, 'SIGINT');
      } catch {
        // Already gone.
      }
    }
    for (const data of [this.replicaData, this.primaryData]) {
      if (!existsSync(join(data, 'postmaster.pid'))) continue;
      spawnSync('runuser', [
        '-u',
        SERVER_USER,
        '--',
        join(postgresBinDir(), 'pg_ctl'),
        'stop',
        '--pgdata',
        data,
        '--mode',
        'immediate',
        '--silent',
      ]);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async serverIds(): Promise<[number, number]> {
    const uid = Number((await run('id', ['-u', SERVER_USER])).stdout.trim());
    const gid = Number((await run('id', ['-g', SERVER_USER])).stdout.trim());
    return [uid, gid];
  }

  private async pgCtl(data: string, name: string, port: number): Promise<void> {
    await this.asServerUser(join(postgresBinDir(), 'pg_ctl'), [
      'start',
      '--pgdata',
      data,
      '--wait',
      '--silent',
      '--log',
      join(this.dir, `${name}.log`),
      '--options',
      `-p ${port} -c listen_addresses=127.0.0.1 -k ${this.dir}`,
    ]);
  }

  private async asServerUser(command: string, args: string[]): Promise<void> {
    try {
      await run('runuser', ['-u', SERVER_USER, '--', command, ...args], { timeout: 60_000 });
    } catch (error) {
      const stderr = (error as { stderr?: string }).stderr ?? '';
      throw new Error(`${command} failed: ${stderr || String(error)}`, { cause: error });
    }
  }
}
