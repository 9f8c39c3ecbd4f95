import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { createDb } from '@linkservice/db';
import type { DbHandle } from '@linkservice/db';
import { testEnvironment } from '@linkservice/testing';
import type { TestTenant } from './testing';
import { createTenant } from './testing';

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
    env: { ...process.env, GATEWAY_PORT: '0', LOG_LEVEL: 'info', ...env },
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

let postgres: DbHandle;
let tenant: TestTenant;
let running: Running | undefined;

beforeAll(async () => {
  postgres = createDb({ connectionString: testEnvironment().databaseUrl, max: 2 });
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
  expect(response).toContain(`"id":"${tenant.app.id}"`);

  expect(await exited).toBe(0);
  await logged('stopped');
});

it('cuts a request off when the grace period ends, then exits 0', async () => {
  running = await startMain({ SHUTDOWN_GRACE_MS: '300' });
  const { child, port, logged, exited } = running;
  const stalled = await openRequest(port, tenant.live.secret);

  const startedAt = Date.now();
  child.kill('SIGTERM');
  await logged('grace period over: closing the remaining connections');
  await once(stalled.socket, 'close');
  expect(await exited).toBe(0);
  expect(Date.now() - startedAt).toBeLessThan(5_000);
});
