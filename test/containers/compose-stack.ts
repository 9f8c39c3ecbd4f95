import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { parse } from 'yaml';

const exec = promisify(execFile);

/**
 * Runs deploy/docker-compose.yml with the `docker` CLI alone, as `docker compose up` would, on an
 * engine without a Compose implementation that follows the Compose Spec (this machine's podman,
 * CI's). It reads the file itself, so what it starts is what the file says: images, commands,
 * environment (with `${VAR:-default}` interpolation), user, read-only root, tmpfs, dropped
 * capabilities, security options, stop grace periods, named volumes, published ports, one
 * project network with the service names as DNS aliases, and `depends_on` with its three
 * conditions. Health checks are run here with `docker exec` (podman leaves them to systemd).
 * Not supported, and refused rather than ignored: anything else a service declares.
 */

interface HealthCheck {
  test: string[];
  interval?: string;
  timeout?: string;
  retries?: number;
  start_period?: string;
}

type Condition = 'service_started' | 'service_healthy' | 'service_completed_successfully';

interface ComposeService {
  image: string;
  build?: unknown;
  command?: string[];
  environment?: Record<string, string | number | boolean | null>;
  user?: string;
  read_only?: boolean;
  tmpfs?: string[];
  cap_drop?: string[];
  security_opt?: string[];
  restart?: string;
  stop_grace_period?: string;
  volumes?: string[];
  ports?: string[];
  healthcheck?: HealthCheck;
  depends_on?: Record<string, { condition: Condition }>;
}

interface ComposeFile {
  name: string;
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

const SUPPORTED = new Set<string>([
  'image',
  'build',
  'command',
  'environment',
  'user',
  'read_only',
  'tmpfs',
  'cap_drop',
  'security_opt',
  'restart',
  'stop_grace_period',
  'volumes',
  'ports',
  'healthcheck',
  'depends_on',
]);

/** `${NAME}`, `${NAME:-default}` and `$$` as Compose interpolates them. */
export function interpolate(text: string, env: Record<string, string | undefined>): string {
  return text.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (match, name: string | undefined, fallback: string | undefined) => {
      if (match === '$$') return '$';
      const value = env[name!];
      return value === undefined || value === '' ? (fallback ?? '') : value;
    },
  );
}

/** Every string in a parsed document, interpolated. */
function interpolateValues(value: unknown, env: Record<string, string | undefined>): unknown {
  if (typeof value === 'string') return interpolate(value, env);
  if (Array.isArray(value)) return value.map((item) => interpolateValues(item, env));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateValues(item, env)]),
    );
  }
  return value;
}

/** Compose durations such as `30s`, `1m30s`, `500ms`, in ms. */
export function durationMs(text: string | undefined, fallbackMs: number): number {
  if (text === undefined) return fallbackMs;
  let total = 0;
  const parts = text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g);
  let matched = '';
  for (const [whole, amount, unit] of parts) {
    matched += whole;
    total += Number(amount) * { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }[unit as 'ms'];
  }
  if (matched !== text) throw new Error(`not a Compose duration: ${text}`);
  return total;
}

/** The services in an order that starts every dependency before what depends on it. */
export function startOrder(services: Record<string, ComposeService>): string[] {
  const order: string[] = [];
  const visiting = new Set<string>();
  const visit = (name: string): void => {
    if (order.includes(name)) return;
    if (visiting.has(name)) throw new Error(`depends_on cycle through ${name}`);
    visiting.add(name);
    const service = services[name] as ComposeService | undefined;
    if (!service) throw new Error(`depends_on names an unknown service: ${name}`);
    for (const dependency of Object.keys(service.depends_on ?? {})) visit(dependency);
    visiting.delete(name);
    order.push(name);
  };
  for (const name of Object.keys(services)) visit(name);
  return order;
}

export async function docker(
  args: string[],
  timeoutMs = 120_000,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const { stdout } = await exec('docker', args, {
    env,
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.trim();
}

/** Like docker(), but answers the exit code and output instead of throwing on a failure. */
async function dockerStatus(
  args: string[],
  timeoutMs: number,
): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await exec('docker', args, { timeout: timeoutMs });
    return { code: 0, output: `${stdout}${stderr}` };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === 'number' ? failed.code : -1,
      output: `${failed.stdout ?? ''}${failed.stderr ?? ''}`,
    };
  }
}

let oneOffs = 0;

/**
 * `docker run --rm <args>` that keeps the exit code: podman's Docker API loses it with `--rm`
 * (the container is gone before it is read), so the container is named, waited for, removed.
 * Resolves with stdout; rejects with the exit code, stdout and stderr for a non-zero exit.
 */
export async function oneOff(
  args: string[],
  timeoutMs = 120_000,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const name = `lsct-run-${process.pid}-${++oneOffs}`;
  try {
    const { stdout } = await exec('docker', ['run', '--name', name, ...args], {
      env,
      timeout: timeoutMs,
      maxBuffer: 64 * 1024 * 1024,
    });
    return stdout.trim();
  } finally {
    await dockerStatus(['rm', '-f', name], 60_000);
  }
}

export interface ComposeStackOptions {
  composeFile: string;
  /** The variables Compose would read from the shell (ports, image, keys...). */
  env: Record<string, string | undefined>;
  /** Overrides the file's `name`, so runs never share containers, volumes or networks. */
  projectName: string;
  /** Progress lines (what starts, what became healthy). */
  log?: (line: string) => void;
}

/** A started project: its containers by service name, and how to reach and stop them. */
export class ComposeStack {
  /** When each service's `docker run` began: start times in the log. */
  private readonly startedAt = new Map<string, number>();
  /** depends_on conditions already seen met: later dependents do not wait again. */
  private readonly met = new Set<string>();

  private constructor(
    readonly project: string,
    private readonly file: ComposeFile,
    private readonly log: (line: string) => void,
  ) {}

  get network(): string {
    return `${this.project}_default`;
  }

  containerOf(service: string): string {
    return `${this.project}-${service}-1`;
  }

  /**
   * Reads the file; nothing starts yet. Keep the stack before calling up(), so a test that
   * gives up while services start can still take down what did.
   */
  static async load(options: ComposeStackOptions): Promise<ComposeStack> {
    // Compose interpolates the parsed values, so a value may hold anything (a PEM's lines too).
    const parsed: unknown = parse(await readFile(options.composeFile, 'utf8'), { merge: true });
    const file = interpolateValues(parsed, options.env) as ComposeFile;
    for (const [name, service] of Object.entries(file.services)) {
      const unsupported = Object.keys(service).filter((key) => !SUPPORTED.has(key));
      if (unsupported.length > 0) {
        throw new Error(
          `service ${name} uses what this runner cannot do: ${unsupported.join(', ')}`,
        );
      }
    }
    return new ComposeStack(options.projectName, file, options.log ?? (() => undefined));
  }

  /** Starts every service in dependency order, as `docker compose up -d`. */
  async up(): Promise<void> {
    await docker(['network', 'create', this.network]);
    for (const name of startOrder(this.file.services)) await this.startService(name);
  }

  /**
   * The `docker run` options a service's declaration asks for (no name, no detach), and the
   * environment to run the CLI with: variables are passed by name (`-e NAME`), their values
   * through the CLI's own environment, so none (a signing key...) shows on a command line.
   */
  private runOptions(name: string): { args: string[]; env: NodeJS.ProcessEnv } {
    const service = this.file.services[name];
    const args = ['--network', this.network];
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const [key, value] of Object.entries(service.environment ?? {})) {
      args.push('-e', key);
      env[key] = value === null ? '' : String(value);
    }
    if (service.user) args.push('--user', service.user);
    if (service.read_only) args.push('--read-only');
    for (const path of service.tmpfs ?? []) args.push('--tmpfs', path);
    for (const capability of service.cap_drop ?? []) args.push('--cap-drop', capability);
    for (const option of service.security_opt ?? []) args.push('--security-opt', option);
    if (service.stop_grace_period) {
      args.push(
        '--stop-timeout',
        String(Math.ceil(durationMs(service.stop_grace_period, 10_000) / 1000)),
      );
    }
    for (const volume of service.volumes ?? []) {
      const [source, target] = volume.split(':');
      const named = this.file.volumes && source in this.file.volumes;
      args.push('-v', named ? `${this.project}_${source}:${target}` : volume);
    }
    return { args, env };
  }

  private async startService(name: string): Promise<void> {
    const service = this.file.services[name];
    for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
      await this.waitFor(dependency, condition);
    }
    const options = this.runOptions(name);
    // The service's name resolves to its container on the project network.
    const args = ['run', '-d', '--name', this.containerOf(name), '--network-alias', name];
    args.push(...options.args);
    if (service.restart && service.restart !== 'no') args.push('--restart', service.restart);
    for (const port of service.ports ?? []) args.push('-p', port);
    args.push(service.image, ...(service.command ?? []));
    this.log(`starting ${name} (${service.image} ${(service.command ?? []).join(' ')})`);
    this.startedAt.set(name, Date.now());
    await docker(args, 120_000, options.env);
  }

  /** Waits until a started service meets a depends_on condition (once per condition). */
  private async waitFor(name: string, condition: Condition): Promise<void> {
    const met = `${name} ${condition}`;
    if (this.met.has(met)) return;
    await this.waitUntilMet(name, condition);
    this.met.add(met);
  }

  private async waitUntilMet(name: string, condition: Condition): Promise<void> {
    const container = this.containerOf(name);
    if (condition === 'service_completed_successfully') {
      const code = await docker(['wait', container], 300_000);
      if (code !== '0') {
        throw new Error(`${name} exited with ${code}:\n${await this.logs(name)}`);
      }
      this.log(`${name} completed`);
      return;
    }
    if (condition === 'service_healthy') await this.waitHealthy(name);
  }

  /**
   * Runs the service's health check until it passes: every `interval`, each try bounded by
   * `timeout`, failing after `start_period` plus `retries` failed tries.
   */
  async waitHealthy(name: string): Promise<void> {
    const check = (this.file.services[name] as ComposeService | undefined)?.healthcheck;
    if (!check) throw new Error(`${name} has no healthcheck to wait for`);
    const [kind, ...rest] = check.test;
    const command = kind === 'CMD-SHELL' ? ['sh', '-c', rest.join(' ')] : rest;
    const intervalMs = Math.min(durationMs(check.interval, 30_000), 1_000);
    const timeoutMs = durationMs(check.timeout, 30_000);
    const deadline =
      Date.now() +
      durationMs(check.start_period, 0) +
      (check.retries ?? 3) * durationMs(check.interval, 30_000) +
      30_000;
    for (;;) {
      const { code, output } = await dockerStatus(
        ['exec', this.containerOf(name), ...command],
        timeoutMs + 5_000,
      );
      if (code === 0) {
        const since = this.startedAt.get(name);
        this.log(
          `${name} healthy${since === undefined ? '' : ` ${Date.now() - since} ms after docker run`}`,
        );
        return;
      }
      if (Date.now() > deadline) {
        throw new Error(
          `${name} never became healthy (${output.trim()}):\n${await this.logs(name)}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }

  /**
   * A one-off container of a service with another command, as `docker compose run --rm
   * <service> <args>` (without the service's network alias, as Compose does): its output, or an
   * error with it when it exits non-zero.
   */
  async run(service: string, args: string[]): Promise<string> {
    const declared = this.file.services[service] as ComposeService | undefined;
    if (!declared) throw new Error(`no service ${service}`);
    const options = this.runOptions(service);
    return oneOff([...options.args, declared.image, ...args], 120_000, options.env);
  }

  /** The host port a service's container port is published on. */
  async hostPort(service: string, containerPort: number): Promise<number> {
    const mapping = await docker(['port', this.containerOf(service), `${containerPort}/tcp`]);
    const port = Number(/:(\d+)\s*$/m.exec(mapping)?.[1]);
    if (!Number.isInteger(port)) throw new Error(`${service}:${containerPort} is not published`);
    return port;
  }

  async logs(service: string): Promise<string> {
    const { output } = await dockerStatus(['logs', this.containerOf(service)], 30_000);
    return output;
  }

  async inspect(service: string): Promise<ContainerState> {
    const [state] = JSON.parse(
      await docker(['inspect', this.containerOf(service)]),
    ) as ContainerState[];
    return state;
  }

  /** `docker stop` (SIGTERM, then SIGKILL after the service's stop grace period). */
  async stop(service: string): Promise<void> {
    await docker(['stop', this.containerOf(service)], 120_000);
  }

  /** Removes every container, the network and the named volumes, as `docker compose down -v`. */
  async down(): Promise<void> {
    const names = Object.keys(this.file.services).map((name) => this.containerOf(name));
    await dockerStatus(['rm', '-f', '-v', ...names], 120_000);
    await dockerStatus(['network', 'rm', this.network], 60_000);
    const volumes = Object.keys(this.file.volumes ?? {}).map((v) => `${this.project}_${v}`);
    if (volumes.length > 0) await dockerStatus(['volume', 'rm', '-f', ...volumes], 60_000);
  }
}

/** What `docker inspect` says of a container, the parts the tests read. */
export interface ContainerState {
  State: { Status: string; ExitCode: number; Running: boolean };
  Config: { User: string };
  HostConfig: { ReadonlyRootfs: boolean; CapDrop: string[] | null; SecurityOpt: string[] | null };
}
