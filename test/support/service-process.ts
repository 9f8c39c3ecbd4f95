import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { eventually, sendRequest } from '@linkservice/testing';

export type ServiceName = 'gateway' | 'worker' | 'redirect';

/** The variable each service reads its HTTP (or, for the worker, health) port from. */
export const PORT_VARIABLE: Record<ServiceName, string> = {
  gateway: 'GATEWAY_PORT',
  worker: 'WORKER_HEALTH_PORT',
  redirect: 'REDIRECT_PORT',
};

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServiceProcessOptions {
  /** A service of the stack, or any other name together with `entryPoint` and `portVariable`. */
  name: string;
  port: number;
  /** The child's whole environment (the port variable is added). Nothing is inherited. */
  env: Record<string, string>;
  /** Script to run; a service's compiled `dist/main.js` by default. */
  entryPoint?: string;
  /** Variable that tells the child its port; the service's own (PORT_VARIABLE) by default. */
  portVariable?: string;
  /** Options for node itself, e.g. `--cpu-prof` (profiles are written when the process exits). */
  execArgv?: string[];
  readyTimeoutMs?: number;
  /** Also copy the child's output to this process's stderr, each line prefixed with the name. */
  echo?: boolean;
  /**
   * Called with every whole line the child writes (stdout and stderr), for a test that reads more
   * of a service's log than the kept tail (e.g. every `creation job finished` line of a worker).
   */
  onLine?: (line: string) => void;
}

function isServiceName(name: string): name is ServiceName {
  return Object.hasOwn(PORT_VARIABLE, name);
}

/** USER_HZ: what /proc/<pid>/stat counts CPU time in; 100 on every Linux architecture node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** How much of a child's output is kept for failure messages. */
const OUTPUT_LIMIT = 64 * 1024;

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Children must not outlive a test run or bench that crashed or was interrupted. */
function killChildrenOnExit(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

export function repositoryRoot(from: string = __dirname): string {
  let dir = from;
  while (!existsSync(join(dir, 'pnpm-workspace.yaml'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no pnpm-workspace.yaml above ${from}`);
    dir = parent;
  }
  return dir;
}

/**
 * The node options every service runs with (deploy/node-flags: the image's entrypoint and
 * `pnpm start` read the same file), so tests and the bench measure the processes as deployed.
 */
export function serviceNodeFlags(): string[] {
  const text = readFileSync(join(repositoryRoot(), 'deploy', 'node-flags'), 'utf8');
  return text.split(/\s+/).filter((flag) => flag !== '');
}

/** The compiled entry point; tests and the bench run what `tsc -b` built, like production. */
export function serviceEntryPoint(name: ServiceName): string {
  return join(repositoryRoot(), 'services', name, 'dist', 'main.js');
}

/**
 * One compiled service running as a real `node` process. Keeps the tail of its stdout/stderr so a
 * failure can say why, and can be killed with any signal and restarted on the same port.
 */
export class ServiceProcess {
  readonly name: string;
  private portNumber: number;
  private readonly portVariable: string;
  private readonly env: Record<string, string>;
  private readonly entryPoint: string;
  private readonly execArgv: string[];
  private readonly readyTimeoutMs: number;
  private readonly echo: boolean;
  private readonly onLine: ((line: string) => void) | undefined;
  private child: ChildProcess | undefined;
  private exited: Promise<ExitInfo> | undefined;
  private lastExit: ExitInfo | undefined;
  private captured = '';

  constructor(options: ServiceProcessOptions) {
    this.name = options.name;
    this.portNumber = options.port;
    this.env = options.env;
    const service = isServiceName(options.name) ? options.name : undefined;
    const entryPoint = options.entryPoint ?? (service && serviceEntryPoint(service));
    const portVariable = options.portVariable ?? (service && PORT_VARIABLE[service]);
    if (!entryPoint || !portVariable) {
      throw new Error(`${options.name} is not a service: give its entryPoint and portVariable`);
    }
    this.entryPoint = entryPoint;
    // A service's own build runs with the deployed node options; the caller's come after them.
    const deployed = options.entryPoint === undefined ? serviceNodeFlags() : [];
    this.execArgv = [...deployed, ...(options.execArgv ?? [])];
    this.portVariable = portVariable;
    this.readyTimeoutMs = options.readyTimeoutMs ?? 20_000;
    this.echo = options.echo ?? false;
    this.onLine = options.onLine;
  }

  get port(): number {
    return this.portNumber;
  }

  /** `http://127.0.0.1:<port>`: the service's HTTP address (the worker's is its health server). */
  get url(): string {
    return `http://127.0.0.1:${this.portNumber}`;
  }

  get pid(): number | undefined {
    return this.isRunning ? this.child?.pid : undefined;
  }

  get isRunning(): boolean {
    return this.child !== undefined && this.lastExit === undefined;
  }

  /** How the last incarnation ended, if it has. */
  get exitInfo(): ExitInfo | undefined {
    return this.lastExit;
  }

  /** The last 64 KiB of stdout and stderr over every incarnation, for failure messages. */
  output(): string {
    return this.captured;
  }

  /**
   * Spawns the process and resolves once `/readyz` answers 200. Rejects (after killing the child)
   * when it exits first or the deadline passes; the error carries the captured output.
   * `onAddressInUse` lets the caller pick another port when the chosen one was taken meanwhile.
   */
  async start(onAddressInUse?: () => Promise<number>): Promise<void> {
    if (this.isRunning) throw new Error(`${this.name} is already running`);
    const entry = this.entryPoint;
    if (!existsSync(entry)) {
      throw new Error(
        `${entry} does not exist: build it first (pnpm exec tsc -b services/${this.name})`,
      );
    }
    for (let attempt = 1; ; attempt++) {
      const outputBefore = this.captured.length;
      this.spawnChild(entry);
      try {
        await this.waitReady();
        return;
      } catch (error) {
        const addressInUse = this.captured.slice(outputBefore).includes('EADDRINUSE');
        await this.stop(2_000);
        if (!addressInUse || !onAddressInUse || attempt >= 3) throw error;
        this.portNumber = await onAddressInUse();
      }
    }
  }

  /** Polls `/readyz` until 200, failing fast when the process exits. */
  async waitReady(timeoutMs: number = this.readyTimeoutMs): Promise<void> {
    let lastAnswer = 'no answer';
    const outcome = await eventually(
      async () => {
        if (!this.isRunning) return 'exited' as const;
        try {
          const res = await sendRequest(`${this.url}/readyz`, { timeoutMs: 1_000 });
          if (res.status === 200) return 'ready' as const;
          lastAnswer = `HTTP ${res.status} ${res.text.slice(0, 200)}`;
        } catch (error) {
          lastAnswer = error instanceof Error ? error.message : String(error);
        }
        return undefined;
      },
      { timeoutMs, intervalMs: 100 },
    )
      // The check never throws: only the deadline rejects, and the failure below says more.
      .catch(() => 'late' as const);
    if (outcome === 'exited') {
      throw this.failure(`exited before it was ready (${describeExit(this.lastExit)})`);
    }
    if (outcome === 'late') {
      throw this.failure(`was not ready within ${timeoutMs} ms (last /readyz: ${lastAnswer})`);
    }
  }

  /** Sends a signal (SIGKILL by default, to simulate a crash). Does not wait; see waitForExit. */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    if (this.isRunning) this.child?.kill(signal);
  }

  /** Resolves when the current incarnation has exited; rejects after the deadline. */
  async waitForExit(timeoutMs = 10_000): Promise<ExitInfo> {
    if (!this.exited) throw new Error(`${this.name} was never started`);
    const exited = this.exited;
    const timeout = new AbortController();
    try {
      return await Promise.race([
        exited,
        delay(timeoutMs, undefined, { signal: timeout.signal }).then(() => {
          throw this.failure(`did not exit within ${timeoutMs} ms`);
        }),
      ]);
    } finally {
      timeout.abort();
    }
  }

  /** SIGTERM, wait for a graceful exit up to the deadline, then SIGKILL. */
  async stop(graceMs = 10_000): Promise<ExitInfo | undefined> {
    if (!this.child) return undefined;
    if (!this.isRunning) return this.lastExit;
    this.child.kill('SIGTERM');
    try {
      return await this.waitForExit(graceMs);
    } catch {
      this.child.kill('SIGKILL');
      return this.waitForExit(5_000);
    }
  }

  /** Stops the process if it still runs (SIGTERM), then starts it again on the same port. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Peak resident set size in bytes (VmHWM from /proc), or null when not running. */
  peakRssBytes(): number | null {
    return this.procStatusBytes('VmHWM');
  }

  /**
   * Resets the peak RSS to the current RSS (`clear_refs` 5), so the next peakRssBytes() covers
   * only what happened since. Returns false when the kernel refused (the peak then stays the
   * lifetime peak).
   */
  resetPeakRss(): boolean {
    const pid = this.pid;
    if (pid === undefined) return false;
    try {
      writeFileSync(`/proc/${pid}/clear_refs`, '5');
      return true;
    } catch {
      return false;
    }
  }

  /** Current resident set size in bytes (VmRSS from /proc), or null when not running. */
  rssBytes(): number | null {
    return this.procStatusBytes('VmRSS');
  }

  /**
   * Current file-backed resident memory in bytes (RssFile from /proc: the node binary's and
   * shared libraries' pages, shared with every process mapping them), or null when not running.
   */
  fileRssBytes(): number | null {
    return this.procStatusBytes('RssFile');
  }

  /**
   * CPU time the process has used so far (user + system), in seconds, from /proc/<pid>/stat;
   * null when not running. The difference over a measurement is its CPU cost.
   */
  cpuSeconds(): number | null {
    const pid = this.pid;
    if (pid === undefined) return null;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      // Fields after the parenthesised command name (which may hold spaces); utime and stime
      // are fields 14 and 15, in clock ticks of 1/100 s on Linux.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
    } catch {
      return null;
    }
  }

  private procStatusBytes(field: 'VmHWM' | 'VmRSS' | 'RssFile'): number | null {
    const pid = this.pid;
    if (pid === undefined) return null;
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const match = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(status);
      return match ? Number(match[1]) * 1024 : null;
    } catch {
      return null;
    }
  }

  private spawnChild(entry: string): void {
    killChildrenOnExit();
    this.lastExit = undefined;
    const child = spawn(process.execPath, [...this.execArgv, entry], {
      cwd: repositoryRoot(),
      // METRICS_PORT 0 unless the test names one: parallel suites must not race for 9464-9466.
      env: { METRICS_PORT: '0', ...this.env, [this.portVariable]: String(this.portNumber) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    running.add(child);
    // A line may arrive in two chunks: each stream keeps its unfinished last line.
    const partial = { stdout: '', stderr: '' };
    const capture = (stream: keyof typeof partial, chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      this.captured = (this.captured + text).slice(-OUTPUT_LIMIT);
      if (this.onLine) {
        const lines = (partial[stream] + text).split('\n');
        partial[stream] = lines.pop() ?? '';
        for (const line of lines) this.onLine(line);
      }
      if (this.echo) {
        process.stderr.write(
          text
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => `[${this.name}] ${line}\n`)
            .join(''),
        );
      }
    };
    child.stdout.on('data', (chunk: Buffer) => capture('stdout', chunk));
    child.stderr.on('data', (chunk: Buffer) => capture('stderr', chunk));
    this.exited = new Promise((resolve) => {
      const settle = (info: ExitInfo): void => {
        running.delete(child);
        if (this.child === child) this.lastExit = info;
        resolve(info);
      };
      child.once('exit', (code, signal) => {
        settle({ code, signal });
      });
      child.once('error', (error) => {
        this.captured += `\n[spawn error] ${error.message}\n`;
        settle({ code: null, signal: null });
      });
    });
  }

  private failure(what: string): Error {
    return new Error(`${this.name} ${what}\n--- ${this.name} output ---\n${this.captured}`);
  }
}

function describeExit(info: ExitInfo | undefined): string {
  if (!info) return 'unknown';
  return info.signal ? `signal ${info.signal}` : `exit code ${String(info.code)}`;
}
