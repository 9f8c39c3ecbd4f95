import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DbHandle } from '@linkservice/db';
import {
  eventually,
  insertLink,
  sendRequest,
  testDatabase,
  testEnvironment,
} from '@linkservice/testing';
import { LINK_DOMAIN, clickCount, createTestApp } from './testing/harness';

/**
 * The compiled service as a real process (pnpm test compiles first; alone, run
 * `pnpm exec tsc -b services/redirect`): signals, the final flush and crash recovery.
 */
const ENTRY = join(__dirname, '..', 'dist', 'main.js');
const env = testEnvironment();
let postgres: DbHandle;

beforeAll(() => {
  if (!existsSync(ENTRY))
    throw new Error(`${ENTRY} is missing: pnpm exec tsc -b services/redirect`);
  postgres = testDatabase(2);
});
afterAll(async () => {
  await postgres.close();
});

interface Running {
  child: ChildProcess;
  port: number;
  exited: Promise<number | null>;
}

/** Starts dist/main.js on port 0 and learns the port from its "listening" log line. */
async function startProcess(redisPrefix: string): Promise<Running> {
  const child = spawn(process.execPath, [ENTRY], {
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      OTEL_SDK_DISABLED: 'true',
      DATABASE_URL: env.databaseUrl,
      REDIS_URL: env.redisUrl,
      REDIS_PREFIX: redisPrefix,
      LINK_DOMAIN,
      REDIRECT_PORT: '0',
      METRICS_PORT: '0',
      // Only the final flush (or start-up recovery) can move clicks during these tests.
      CLICK_FLUSH_INTERVAL_MS: '600000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`no listening line:\n${output}`));
    }, 15_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      for (const line of output.split('\n')) {
        const parsed = parseJsonLine(line);
        if (parsed?.msg === 'redirect listening' && typeof parsed.port === 'number') {
          clearTimeout(timer);
          resolve(parsed.port);
        }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${String(code)} before listening:\n${output}`));
    });
  });
  // Redis may still be connecting: wait until the service says it is ready.
  await eventually(
    async () => (await sendRequest(`http://127.0.0.1:${port}/readyz`)).status === 200,
    {
      timeoutMs: 10_000,
      what: 'the redirect process ready',
    },
  );
  return { child, port, exited };
}

function parseJsonLine(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

describe('redirect process', () => {
  it('loses no click across a clean restart and recovers the clicks of a crashed one', async () => {
    const redisPrefix = `${env.redisPrefix}:proc-${randomUUID().slice(0, 8)}`;
    const app = await createTestApp(postgres.db);
    const link = await insertLink(postgres.db, app);
    const click = (port: number) =>
      sendRequest(`http://127.0.0.1:${port}/${link.alias}`, { host: app.liveHost });

    // Clean stop: SIGTERM lets the final flush write every counted click.
    const first = await startProcess(redisPrefix);
    const answers = await Promise.all(Array.from({ length: 40 }, () => click(first.port)));
    expect(answers.every((a) => a.status === 302)).toBe(true);
    expect(await clickCount(postgres.db, link.id)).toBe(0);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(await clickCount(postgres.db, link.id)).toBe(40);

    // Crash: SIGKILL, no flush. The clicks wait in Redis; the next start applies them.
    const second = await startProcess(redisPrefix);
    await Promise.all(Array.from({ length: 25 }, () => click(second.port)));
    second.child.kill('SIGKILL');
    await second.exited;
    expect(await clickCount(postgres.db, link.id)).toBe(40);

    const third = await startProcess(redisPrefix);
    try {
      const counted = await eventually(
        async () => (await clickCount(postgres.db, link.id)) === 65 && 65,
        { timeoutMs: 5_000, what: 'all 65 clicks in Postgres' },
      );
      expect(counted).toBe(65);
    } finally {
      third.child.kill('SIGTERM');
      await third.exited;
    }
    expect(await clickCount(postgres.db, link.id)).toBe(65);
  });
});
