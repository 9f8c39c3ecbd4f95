import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { DbHandle } from '@linkservice/db';
import { closeRedis, REDIS_CONNECTION_DEFAULTS } from '@linkservice/lifecycle';
import type { Tenant } from '@linkservice/testing';
import { createTenant, sendRequest, testDatabase, testEnvironment } from '@linkservice/testing';

/**
 * main.ts as a real process (the compiled dist/main.js: run `pnpm exec tsc -b services/gateway`
 * first, as `pnpm test` does): SIGTERM stops accepting, lets the in-flight request finish, then
 * exits 0; a request still open when the grace period ends is cut off.
 */

const MAIN = join(__dirname, '..', 'dist', 'main.js');

interface Running {
  child: ChildProcess;
  port: number;
  /** Resolves with the first log line whose msg matches. */
  logged: (msg: string) => Promise<void>;
  exited: Promise<number | null>;
}

async function startMain(env: Record<string, string>): Promise<Running> {
  const child = spawn(process.execPath, [MAIN], {
    env: { ...process.env, GATEWAY_PORT: '0', METRICS_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const messages: string[] = [];
  const waiters: { msg: string; resolve: () => void }[] = [];
  let port = 0;
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    const lines = buffered.split('\n');
    buffered = lines.pop()!;
    for (const line of lines) {
      const entry = JSON.parse(line) as { msg: string; port?: number };
      if (entry.port !== undefined) port = entry.port;
      messages.push(entry.msg);
      for (const waiter of waiters.filter((w) => w.msg === entry.msg)) waiter.resolve();
    }
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  const logged = (msg: string) =>
    messages.includes(msg)
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiters.push({ msg, resolve }));
  await Promise.race([
    logged('gateway listening'),
    exited.then((code) => {
      throw new Error(`gateway exited with ${code} before listening`);
    }),
  ]);
  return { child, port, logged, exited };
}

/** Sends the head of a request with a 2-byte JSON body announced, and waits for 100 Continue: */
/** from then on the server is handling the request, so it is in flight. */
async function openRequest(
  port: number,
  key: string,
): Promise<{ socket: Socket; read: () => string }> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let received = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
  const gotContinue = new Promise<void>((resolve) => {
    const check = () => {
      if (received.includes('100 Continue')) resolve();
      else socket.once('data', check);
    };
    socket.once('data', check);
  });
  socket.write(
    [
      'GET /api/v1/app HTTP/1.1',
      `Host: 127.0.0.1:${port}`,
      `Authorization: Bearer ${key}`,
      'Content-Type: application/json',
      'Content-Length: 2',
      'Expect: 100-continue',
      '',
      '',
    ].join('\r\n'),
  );
  await gotContinue;
  return { socket, read: () => received };
}

/**
 * An OTLP/HTTP endpoint: `onExport` runs when the first export arrives, before it is answered,
 * and the result resolves `exported`.
 */
async function startTraceCollector<T>(onExport: (body: string) => Promise<T>) {
  let received: (value: T) => void = () => undefined;
  const exported = new Promise<T>((resolve) => (received = resolve));
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      void onExport(body).then((value) => {
        received(value);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    exported,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  };
}

let postgres: DbHandle;
let tenant: Tenant;
let running: Running | undefined;

beforeAll(async () => {
  postgres = testDatabase(2);
  tenant = await createTenant(postgres.db);
});
afterEach(() => {
  running?.child.kill('SIGKILL');
  running = undefined;
});
afterAll(async () => {
  await postgres.close();
});

it('on SIGTERM stops accepting, finishes the request in flight, then exits 0', async () => {
  running = await startMain({ SHUTDOWN_GRACE_MS: '10000' });
  const { child, port, logged, exited } = running;
  const inFlight = await openRequest(port, tenant.live.secret);

  child.kill('SIGTERM');
  await logged('shutting down: no longer accepting connections');
  const refused = connect(port, '127.0.0.1');
  const [error] = (await once(refused, 'error')) as [NodeJS.ErrnoException];
  expect(error.code).toBe('ECONNREFUSED');

  inFlight.socket.write('{}');
  await once(inFlight.socket, 'end');
  const response = inFlight.read().split('HTTP/1.1 100 Continue\r\n\r\n')[1];
  expect(response).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
  expect(response).toMatch(/\r\nConnection: close\r\n/i);
  expect(response).toContain(`"id":"${tenant.appId}"`);

  expect(await exited).toBe(0);
  await logged('stopped');
});

it('cuts a request off when the grace period ends, then exits 0', async () => {
  running = await startMain({ SHUTDOWN_GRACE_MS: '300' });
  const { child, port, logged, exited } = running;
  const stalled = await openRequest(port, tenant.live.secret);

  // Listening before the signal: the cut can close the socket before its log line is read.
  const cut = once(stalled.socket, 'close');
  const startedAt = Date.now();
  child.kill('SIGTERM');
  await logged('grace period over: closing the remaining connections');
  await cut;
  expect(await exited).toBe(0);
  expect(Date.now() - startedAt).toBeLessThan(5_000);
});

it('flushes telemetry only once its Redis and Postgres connections are closed', async () => {
  // Names only this process's connections carry: other tests' gateways use the same database.
  const unique = randomBytes(4).toString('hex');
  const redisPrefix = `${testEnvironment().redisPrefix}:${unique}`;
  const applicationName = `gateway-shutdown-${unique}`;
  const databaseUrl = new URL(testEnvironment().databaseUrl);
  databaseUrl.searchParams.set('application_name', applicationName);
  const redis = new Redis(testEnvironment().redisUrl, REDIS_CONNECTION_DEFAULTS);
  /** This process's connections: the pool's by application_name, the creation client's by name. */
  const openConnections = async () => {
    const [{ rows }, clients] = await Promise.all([
      sql<{ open: number }>`select count(*)::int as open from pg_stat_activity
        where application_name = ${applicationName}`.execute(postgres.db),
      redis.client('LIST') as Promise<string>,
    ]);
    const named = clients.split('\n').filter((line) => line.includes(` name=${redisPrefix}:`));
    return { postgres: rows[0].open, redis: named.length };
  };
  const collector = await startTraceCollector(async (body) => ({
    open: await openConnections(),
    body,
  }));
  try {
    running = await startMain({
      DATABASE_URL: databaseUrl.toString(),
      REDIS_PREFIX: redisPrefix,
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      // No scheduled export: the first one is the flush at shutdown.
      OTEL_BSP_SCHEDULE_DELAY: '600000',
    });
    const { child, port, exited } = running;
    // A traced request: its spans are what the flush exports, over open Postgres connections.
    const res = await sendRequest(`http://127.0.0.1:${port}/api/v1/app`, {
      key: tenant.live.secret,
    });
    expect(res.status).toBe(200);
    const before = await openConnections();
    expect(before.postgres).toBeGreaterThan(0);
    expect(before.redis).toBeGreaterThan(0);

    child.kill('SIGTERM');
    // The gateway answers the export before it exits: exiting first means it sent none.
    const atExport = await Promise.race([collector.exported, exited.then(() => undefined)]);
    expect(await exited).toBe(0);
    expect(atExport?.body).toContain('/api/v1/app');
    expect(atExport?.open).toEqual({ postgres: 0, redis: 0 });
  } finally {
    await collector.close();
    await closeRedis(redis);
  }
});
