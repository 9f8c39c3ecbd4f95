import { randomBytes } from 'node:crypto';
import { ServiceProcess } from './service-process';
import type { ServiceName } from './service-process';

export {
  ServiceProcess,
  PORT_VARIABLE,
  repositoryRoot,
  serviceEntryPoint,
} from './service-process';
import { generateReceiptSigningKey } from '@linkservice/keys';
import type { ApiBody, HttpRequest, HttpResponse } from '@linkservice/testing';
import {
  committedOpenApiDocument,
  freePort,
  methodOf,
  OpenApiConformance,
  ownDatabase,
  sendRequest,
  testDatabase,
  testEnvironment,
} from '@linkservice/testing';
import type { DbHandle } from '@linkservice/db';
export type { ExitInfo, ServiceName } from './service-process';

export const ALL_SERVICES: readonly ServiceName[] = ['gateway', 'worker', 'redirect'];

export interface StackOptions {
  databaseUrl: string;
  redisUrl: string;
  /**
   * `host:port,host:port,…` of a Redis Cluster: when set, the services get REDIS_CLUSTER_NODES
   * instead of REDIS_URL (which `redisUrl` then only names for the test's own checks).
   */
  redisClusterNodes?: string;
  /**
   * Base Redis namespace, e.g. the run's REDIS_PREFIX from testEnvironment(). The stack appends
   * its own random suffix (see `stack.redisPrefix`) so two stacks of one run never share queues
   * or limiter keys; the run's teardown still removes them, as they start with this prefix.
   */
  redisPrefix: string;
  /** Use `redisPrefix` exactly as given instead of a per-stack namespace under it. */
  exactRedisPrefix?: boolean;
  /** Which services to run; all three by default. */
  services?: readonly ServiceName[];
  linkDomain?: string;
  creationLimitPerHour?: number;
  /** `silent` by default; the captured output is what failure messages show. */
  logLevel?: string;
  nodeEnv?: 'development' | 'production' | 'test';
  /** Extra variables for every service (e.g. CREATION_TIMEOUT_MS, WORKER_CONCURRENCY). */
  env?: Record<string, string>;
  /** Extra variables for one service only; they win over `env`. */
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  /** Options for node per service, e.g. `{ gateway: ['--cpu-prof'] }`. */
  execArgv?: Partial<Record<ServiceName, string[]>>;
  readyTimeoutMs?: number;
  /** Copy the services' output to stderr as it arrives (debugging). */
  echo?: boolean;
  /** Every whole line a service writes, with the service's name (see ServiceProcess onLine). */
  onLine?: (service: ServiceName, line: string) => void;
  /**
   * Export every service's traces over OTLP/HTTP (JSON) to this base URL, e.g. an
   * OtlpReceiver's. The only way to turn telemetry on: it is off otherwise.
   */
  otlpEndpoint?: string;
}

/**
 * The compiled services running as real processes against one database and Redis namespace,
 * each on a free port of 127.0.0.1. Start with `startStack`; always `stop()` it (afterAll).
 */
export class Stack {
  constructor(
    private readonly processes: Partial<Record<ServiceName, ServiceProcess>>,
    readonly redisPrefix: string,
    readonly linkDomain: string,
    /**
     * DATABASE_URL and REDIS_URL or REDIS_CLUSTER_NODES as the services got them: what an
     * operator's linkctl for this stack is given.
     */
    readonly connectionEnv: Record<string, string>,
  ) {}

  /** A started service; throws when the stack was started without it. */
  service(name: ServiceName): ServiceProcess {
    const found = this.processes[name];
    if (!found) throw new Error(`the stack was started without the ${name}`);
    return found;
  }

  get gateway(): ServiceProcess {
    return this.service('gateway');
  }

  get worker(): ServiceProcess {
    return this.service('worker');
  }

  get redirect(): ServiceProcess {
    return this.service('redirect');
  }

  /** `http://127.0.0.1:<gateway port>/api/v1`, the spec's `{base_url}`. */
  get apiUrl(): string {
    return `${this.gateway.url}/api/v1`;
  }

  /** Every started service, gateway first. */
  list(): ServiceProcess[] {
    return Object.values(this.processes);
  }

  /** Output of every service, for a failing test's message. */
  output(): string {
    return this.list()
      .map((p) => `--- ${p.name} ---\n${p.output()}`)
      .join('\n');
  }

  /** Graceful stop of every service at once (SIGTERM, then SIGKILL after the grace period). */
  async stop(graceMs = 10_000): Promise<void> {
    await Promise.all(this.list().map((p) => p.stop(graceMs)));
  }
}

/** Starts the chosen services in parallel and waits until every `/readyz` answers 200. */
export async function startStack(options: StackOptions): Promise<Stack> {
  const names = options.services ?? ALL_SERVICES;
  const redisPrefix = options.exactRedisPrefix
    ? options.redisPrefix
    : `${options.redisPrefix}-${randomBytes(3).toString('hex')}`;
  const webhookKey = randomBytes(32).toString('base64');
  const linkDomain = options.linkDomain ?? 'links.localhost';

  const ports = new Map<ServiceName, number>();
  for (const name of names) ports.set(name, await freePort());
  const sharedEnv: Record<string, string> = {
    ...baseProcessEnv(),
    NODE_ENV: options.nodeEnv ?? 'test',
    LOG_LEVEL: options.logLevel ?? 'silent',
    // Telemetry stays off even when the caller's shell asks for an exporter, unless asked here.
    ...(options.otlpEndpoint === undefined
      ? { OTEL_SDK_DISABLED: 'true' }
      : {
          OTEL_EXPORTER_OTLP_ENDPOINT: options.otlpEndpoint,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
          OTEL_METRICS_EXPORTER: 'none',
          OTEL_LOGS_EXPORTER: 'none',
          // Spans reach the receiver within a fraction of a second, not the default 5 s.
          OTEL_BSP_SCHEDULE_DELAY: '100',
        }),
    DATABASE_URL: options.databaseUrl,
    ...(options.redisClusterNodes === undefined
      ? { REDIS_URL: options.redisUrl }
      : { REDIS_CLUSTER_NODES: options.redisClusterNodes }),
    REDIS_PREFIX: redisPrefix,
    LINK_DOMAIN: linkDomain,
    // Required by the gateway: the run's key from global-setup, else one for this stack.
    RECEIPT_SIGNING_KEY: process.env.RECEIPT_SIGNING_KEY ?? generateReceiptSigningKey(),
    // Shared by the stack's gateway and worker: the run's key from global-setup, else its own.
    WEBHOOK_ENCRYPTION_KEY: process.env.WEBHOOK_ENCRYPTION_KEY ?? webhookKey,
    ...(options.creationLimitPerHour === undefined
      ? {}
      : { CREATION_LIMIT_PER_HOUR: String(options.creationLimitPerHour) }),
    ...options.env,
  };

  const processes: Partial<Record<ServiceName, ServiceProcess>> = {};
  for (const name of names) {
    processes[name] = new ServiceProcess({
      name,
      port: ports.get(name)!,
      env: { ...sharedEnv, ...options.serviceEnv?.[name] },
      execArgv: options.execArgv?.[name],
      readyTimeoutMs: options.readyTimeoutMs,
      echo: options.echo,
      onLine: options.onLine && ((line) => options.onLine?.(name, line)),
    });
  }
  const stack = new Stack(processes, redisPrefix, linkDomain, {
    DATABASE_URL: options.databaseUrl,
    ...(options.redisClusterNodes === undefined
      ? { REDIS_URL: options.redisUrl }
      : { REDIS_CLUSTER_NODES: options.redisClusterNodes }),
  });

  const started = await Promise.allSettled(stack.list().map((p) => p.start(freePort)));
  const failures = started.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failures.length > 0) {
    await stack.stop(2_000);
    const reasons = failures.map((f) =>
      f.reason instanceof Error ? f.reason.message : String(f.reason),
    );
    throw new Error(`the stack did not start:\n${reasons.join('\n')}`);
  }
  return stack;
}

/** startStack on the test run's database and Redis namespace (global-setup's), `options` on top. */
export function startRunStack(
  options: Omit<StackOptions, 'databaseUrl' | 'redisUrl' | 'redisPrefix'> = {},
): Promise<Stack> {
  const { databaseUrl, redisUrl, redisPrefix } = testEnvironment();
  return startStack({ databaseUrl, redisUrl, redisPrefix, ...options });
}

/**
 * For an e2e suite: a run stack started before its tests and stopped after them, with a
 * connection to the run's database. Read `suite.stack` and `suite.postgres` in tests and hooks.
 */
export function useRunStack(options: Parameters<typeof startRunStack>[0] = {}): {
  readonly stack: Stack;
  readonly postgres: DbHandle;
} {
  let stack: Stack | undefined;
  let postgres: DbHandle | undefined;
  beforeAll(async () => {
    postgres = testDatabase(2);
    stack = await startRunStack(options);
  });
  afterAll(async () => {
    await stack?.stop();
    await postgres?.close();
  });
  return {
    get stack() {
      if (!stack) throw new Error('the run stack is read before beforeAll started it');
      return stack;
    },
    get postgres() {
      if (!postgres) throw new Error('the database is read before beforeAll opened it');
      return postgres;
    },
  };
}

type RunStackOptions = Omit<StackOptions, 'databaseUrl' | 'redisUrl' | 'redisPrefix'>;

/**
 * useRunStack on a database of the suite's own (ownDatabase), dropped after it: for suites whose
 * webhook deliveries no other file's worker may touch, and that must not touch theirs (a worker's
 * relay claims the due deliveries of its whole database). `options` may be a function, read
 * when the stack starts (e.g. for the URL of a receiver an earlier beforeAll started).
 */
export function useOwnDatabaseStack(options: RunStackOptions | (() => RunStackOptions) = {}): {
  readonly stack: Stack;
  readonly postgres: DbHandle;
} {
  let stack: Stack | undefined;
  let database: Awaited<ReturnType<typeof ownDatabase>> | undefined;
  beforeAll(async () => {
    database = await ownDatabase(2);
    const { redisUrl, redisPrefix } = testEnvironment();
    const given = typeof options === 'function' ? options() : options;
    stack = await startStack({ databaseUrl: database.url, redisUrl, redisPrefix, ...given });
  });
  afterAll(async () => {
    await stack?.stop();
    await database?.drop();
  });
  return {
    get stack() {
      if (!stack) throw new Error('the stack is read before beforeAll started it');
      return stack;
    },
    get postgres() {
      if (!database) throw new Error('the database is read before beforeAll made it');
      return database;
    },
  };
}

/** What a child needs from this process's environment to run node at all; nothing else leaks. */
function baseProcessEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

let conformance: OpenApiConformance | undefined;

/**
 * sendRequest for the running stack's API (`${stack.apiUrl}/…`): every answer is checked against
 * the committed API document (docs/openapi.json, equal to the code's by the drift check), so an
 * e2e test that receives an answer the document does not describe fails.
 */
export async function sendApiRequest<Body = ApiBody>(
  url: string,
  request?: HttpRequest,
): Promise<HttpResponse<Body>> {
  const res = await sendRequest<Body>(url, request);
  conformance ??= new OpenApiConformance(committedOpenApiDocument());
  const { pathname, search } = new URL(url);
  conformance.check({ method: methodOf(request), path: `${pathname}${search}`, ...res });
  return res;
}
