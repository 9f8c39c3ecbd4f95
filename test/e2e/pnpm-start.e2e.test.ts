import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createPublicKey, randomBytes } from 'node:crypto';
import { generateReceiptSigningKey } from '@linkservice/keys';
import { eventually, freePort, sendRequest, testEnvironment } from '@linkservice/testing';
import { repositoryRoot } from '../support/service-process';

/**
 * `pnpm start` as the README runs it, stopped by a signal sent to the pnpm process alone, as a
 * supervisor, `timeout` or a script's `child.kill()` does (a terminal's Ctrl-C reaches the whole
 * process group, which hides a script that does not pass signals on). Every service must shut
 * down gracefully, say so in one line, and nothing of the process tree may outlive pnpm, which
 * exits 0. Each service says once started on which ports it listens (metrics ports picked for a
 * 0 included). Without RECEIPT_SIGNING_KEY the gateway runs on a development key it announces
 * with a warning; with one, it uses that key.
 */

const SERVICES = ['gateway', 'worker', 'redirect'] as const;
type Service = (typeof SERVICES)[number];

const PORT_VARIABLES: Record<Service, string> = {
  gateway: 'GATEWAY_PORT',
  worker: 'WORKER_HEALTH_PORT',
  redirect: 'REDIRECT_PORT',
};

const METRICS_PORT_VARIABLES: Record<Service, string> = {
  gateway: 'GATEWAY_METRICS_PORT',
  worker: 'WORKER_METRICS_PORT',
  redirect: 'REDIRECT_METRICS_PORT',
};

/** The role runService's started line names each service's own port by. */
const PORT_ROLES: Record<Service, string> = { gateway: 'http', worker: 'health', redirect: 'http' };

/** `pnpm start` builds (a no-op after `pnpm test`'s build) and migrates before it starts. */
const READY_TIMEOUT_MS = 90_000;
const STOP_TIMEOUT_MS = 30_000;

jest.setTimeout(READY_TIMEOUT_MS + STOP_TIMEOUT_MS + 10_000);

interface Started {
  child: ChildProcess;
  ports: Record<Service, number>;
  output: () => string;
}

let started: Started | undefined;

afterEach(() => {
  // The test failed part way: leave no process of the tree behind.
  if (started?.child.pid !== undefined && processGroupAlive(started.child.pid)) {
    process.kill(-started.child.pid, 'SIGKILL');
  }
  started = undefined;
});

/** The warning the gateway logs when dev.main.ts made it a development key. */
const DEVELOPMENT_KEY_WARNING = /\[gateway\] \{"level":"warn".*"msg":"RECEIPT_SIGNING_KEY is unset/;

function startWithPnpm(
  ports: Record<Service, number>,
  extraEnv: Record<string, string>,
  receiptSigningKey?: string,
): Started {
  const env = testEnvironment();
  const childEnv: Record<string, string> = {
    DATABASE_URL: env.databaseUrl,
    REDIS_URL: env.redisUrl,
    REDIS_PREFIX: `${env.redisPrefix}-start-${randomBytes(3).toString('hex')}`,
    LOG_LEVEL: 'info',
    OTEL_SDK_DISABLED: 'true',
    ...extraEnv,
    ...(receiptSigningKey === undefined ? {} : { RECEIPT_SIGNING_KEY: receiptSigningKey }),
  };
  for (const name of ['HOME', 'TMPDIR', 'LANG']) {
    const value = process.env[name];
    if (value !== undefined) childEnv[name] = value;
  }
  // The PATH of a shell, not of this script: pnpm put node_modules/.bin first for jest, whose
  // `node` shim (the Node 24 dev dependency's) would run pnpm itself as a child of a shell
  // script, and a signal sent to "pnpm" would reach that script instead.
  childEnv.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !dir.endsWith('node_modules/.bin'))
    .join(':');
  for (const service of SERVICES) childEnv[PORT_VARIABLES[service]] = String(ports[service]);

  // Its own process group, so the test can tell whether any process of the tree survived.
  const child = spawn('pnpm', ['start'], {
    cwd: repositoryRoot(),
    env: childEnv,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let captured = '';
  const capture = (chunk: Buffer): void => {
    captured = (captured + chunk.toString('utf8')).slice(-64 * 1024);
  };
  child.stdout.on('data', capture);
  child.stderr.on('data', capture);
  return { child, ports, output: () => captured };
}

function processGroupAlive(groupId: number): boolean {
  try {
    process.kill(-groupId, 0);
    return true;
  } catch {
    return false;
  }
}

async function answersReady(port: number): Promise<boolean> {
  try {
    const res = await sendRequest(`http://127.0.0.1:${port}/readyz`, { timeoutMs: 1_000 });
    return res.status === 200;
  } catch {
    return false;
  }
}

async function freePorts(): Promise<Record<Service, number>> {
  const ports = {} as Record<Service, number>;
  for (const service of SERVICES) ports[service] = await freePort();
  return ports;
}

/** The metrics port a service's `<name> started: …` line names. */
function startedMetricsPort(output: string, service: Service, ownPort: number): number | undefined {
  const line = new RegExp(
    `^\\[${service}\\] ${service} started: ${PORT_ROLES[service]} port ${ownPort}, metrics port (\\d+)$`,
    'm',
  ).exec(output);
  return line ? Number(line[1]) : undefined;
}

async function answersAtAll(port: number): Promise<boolean> {
  try {
    await sendRequest(`http://127.0.0.1:${port}/healthz`, { timeoutMs: 1_000 });
    return true;
  } catch {
    return false;
  }
}

async function waitUntil(
  condition: () => Promise<boolean> | boolean,
  timeoutMs: number,
  what: string,
  output: () => string,
): Promise<void> {
  try {
    await eventually(condition, { timeoutMs, intervalMs: 200, what });
  } catch {
    throw new Error(`${what} within ${timeoutMs} ms\n--- pnpm start output ---\n${output()}`);
  }
}

interface Jwks {
  keys: { kty: string; crv: string; x: string; kid: string; alg: string; use: string }[];
}

/** The public key receipts verify with, as a verifier fetches it from the gateway. */
async function servedKeys(gatewayPort: number): Promise<Jwks['keys']> {
  const res = await sendRequest<Jwks>(`http://127.0.0.1:${gatewayPort}/.well-known/jwks.json`);
  // The text shows in the failure message when it is not a 200.
  expect({ status: res.status, text: res.text }).toMatchObject({ status: 200 });
  return res.body?.keys ?? [];
}

// Two runs, each stopped by one of the two signals: one without a key and with METRICS_PORT=0
// (a free metrics port each), one with a key and a metrics port of each service's own, which
// wins over a METRICS_PORT that would otherwise be refused.
describe.each([
  ['SIGINT', 'without'],
  ['SIGTERM', 'with'],
] as const)('pnpm start, then %s to pnpm (%s RECEIPT_SIGNING_KEY)', (signal, keyGiven) => {
  it('serves receipts from the right key, then stops every service gracefully, exits 0 and leaves no process behind', async () => {
    const givenKey = keyGiven === 'with' ? generateReceiptSigningKey() : undefined;
    const ports = await freePorts();
    const ownMetricsPorts = keyGiven === 'with' ? await freePorts() : undefined;
    const metricsEnv: Record<string, string> = ownMetricsPorts
      ? {
          METRICS_PORT: String(await freePort()),
          ...Object.fromEntries(
            SERVICES.map((s) => [METRICS_PORT_VARIABLES[s], String(ownMetricsPorts[s])]),
          ),
        }
      : // The defaults may be taken by a running stack.
        { METRICS_PORT: '0' };
    started = startWithPnpm(ports, metricsEnv, givenKey);
    const { child, output } = started;
    const pid = child.pid!;
    await waitUntil(
      async () => (await Promise.all(SERVICES.map((s) => answersReady(ports[s])))).every(Boolean),
      READY_TIMEOUT_MS,
      'the gateway, worker and redirect were not all ready',
      output,
    );
    for (const service of SERVICES) {
      const metricsPort = startedMetricsPort(output(), service, ports[service]);
      expect({ service, metricsPort }).toEqual({
        service,
        metricsPort: ownMetricsPorts ? ownMetricsPorts[service] : expect.any(Number),
      });
      const scrape = await sendRequest(`http://127.0.0.1:${metricsPort}/metrics`);
      expect({ service, status: scrape.status }).toEqual({ service, status: 200 });
    }

    // One Ed25519 public key: the development key, or the one given.
    const keys = await servedKeys(ports.gateway);
    expect(keys).toEqual([
      {
        kty: 'OKP',
        crv: 'Ed25519',
        x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        kid: expect.any(String),
        alg: 'EdDSA',
        use: 'sig',
      },
    ]);
    if (givenKey === undefined) {
      expect(output()).toMatch(DEVELOPMENT_KEY_WARNING);
    } else {
      expect(output()).not.toMatch(DEVELOPMENT_KEY_WARNING);
      expect(keys[0].x).toBe(createPublicKey(givenKey).export({ format: 'jwk' }).x);
    }

    child.kill(signal);

    await waitUntil(
      () => child.exitCode !== null || child.signalCode !== null,
      STOP_TIMEOUT_MS,
      `pnpm did not exit after ${signal}`,
      output,
    );
    await waitUntil(
      () => !processGroupAlive(pid),
      STOP_TIMEOUT_MS,
      `processes of pnpm start outlived pnpm after ${signal}`,
      output,
    );
    expect({ exitCode: child.exitCode, signalCode: child.signalCode }).toEqual({
      exitCode: 0,
      signalCode: null,
    });
    for (const service of SERVICES) {
      expect(await answersAtAll(ports[service])).toBe(false);
      // Each service logs "stopped" only at the end of its graceful shutdown.
      expect(output()).toMatch(new RegExp(`\\[${service}\\] \\{[^\\n]*"msg":"stopped"`));
      // concurrently's line for the process, which exited with runService's code.
      expect(output()).toMatch(new RegExp(`^\\[${service}\\] .*exited with code 0$`, 'm'));
      expect(output()).not.toMatch(new RegExp(`^\\[${service}\\] .*exited with code [^0]`, 'm'));
    }
  });
});

it('refuses one METRICS_PORT for the three services at once, with one line, before building', async () => {
  started = startWithPnpm(await freePorts(), { METRICS_PORT: '9500' });
  const { child, output } = started;
  await waitUntil(
    () => child.exitCode !== null,
    STOP_TIMEOUT_MS,
    'pnpm start did not refuse METRICS_PORT=9500',
    output,
  );
  expect(child.exitCode).toBe(78);
  expect(output()).toContain(
    'pnpm start: METRICS_PORT=9500 would be one port for three services; set ' +
      'GATEWAY_METRICS_PORT, WORKER_METRICS_PORT and REDIRECT_METRICS_PORT instead',
  );
  expect(output()).not.toContain('pnpm start: compiling');
});
