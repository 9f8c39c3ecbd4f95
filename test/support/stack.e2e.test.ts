import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, sendRequest } from '@linkservice/testing';
import { PORT_VARIABLE, ServiceProcess } from './service-process';

/**
 * A stand-in service: answers /readyz like the real ones, logs a line, and behaves as the
 * FIXTURE_MODE variable says, so the harness is tested without depending on the services.
 */
const FIXTURE = `
const http = require('node:http');
const mode = process.env.FIXTURE_MODE ?? 'normal';
if (mode === 'crash') { console.error('fixture crashed on purpose'); process.exit(3); }
const port = Number(process.env.${PORT_VARIABLE.gateway});
if (mode === 'burn') while (process.cpuUsage().user < 400000) {}
const ballast = mode === 'memory' ? Buffer.alloc(64 * 1024 * 1024, 1) : null;
const server = http.createServer((req, res) => {
  res.statusCode = req.url === '/readyz' && mode !== 'never-ready' ? 200 : 503;
  res.end(String(process.pid) + (ballast ? ballast.length : ''));
});
server.on('error', (e) => { console.error(e.code); process.exit(1); });
server.listen(port, '127.0.0.1', () => console.log('fixture listening on', port, 'with', JSON.stringify(process.execArgv)));
if (mode === 'stubborn') process.on('SIGTERM', () => console.log('ignoring SIGTERM'));
else process.on('SIGTERM', () => server.close(() => process.exit(0)));
`;

describe('ServiceProcess', () => {
  let dir: string;
  let entryPoint: string;
  const started: ServiceProcess[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'stack-test-'));
    entryPoint = join(dir, 'fixture.js');
    writeFileSync(entryPoint, FIXTURE);
  });

  afterEach(async () => {
    await Promise.all(started.splice(0).map((p) => p.stop(1_000)));
  });

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  async function fixture(
    mode: string,
    readyTimeoutMs = 30_000,
    execArgv?: string[],
  ): Promise<ServiceProcess> {
    const service = new ServiceProcess({
      name: 'gateway',
      port: await freePort(),
      env: { PATH: process.env.PATH ?? '', FIXTURE_MODE: mode },
      entryPoint,
      readyTimeoutMs,
      execArgv,
    });
    started.push(service);
    return service;
  }

  it('starts, waits for /readyz and captures output', async () => {
    const service = await fixture('normal', 5_000, ['--max-old-space-size=96']);
    await service.start();
    expect(service.isRunning).toBe(true);
    const res = await sendRequest(`${service.url}/readyz`);
    expect(res.status).toBe(200);
    expect(res.text).toBe(String(service.pid));
    expect(service.output()).toContain(
      `fixture listening on ${service.port} with ["--max-old-space-size=96"]`,
    );
  });

  it('stops gracefully with SIGTERM', async () => {
    const service = await fixture('normal');
    await service.start();
    await expect(service.stop()).resolves.toEqual({ code: 0, signal: null });
    expect(service.isRunning).toBe(false);
    expect(service.pid).toBeUndefined();
  });

  it('falls back to SIGKILL when SIGTERM is ignored', async () => {
    const service = await fixture('stubborn');
    await service.start();
    await expect(service.stop(300)).resolves.toEqual({ code: null, signal: 'SIGKILL' });
    expect(service.output()).toContain('ignoring SIGTERM');
  });

  it('is killed with a signal and restarted on the same port', async () => {
    const service = await fixture('normal');
    await service.start();
    const { port, pid } = service;
    service.kill('SIGKILL');
    await expect(service.waitForExit()).resolves.toEqual({ code: null, signal: 'SIGKILL' });
    await service.restart();
    expect(service.port).toBe(port);
    expect(service.pid).not.toBe(pid);
    expect((await sendRequest(`${service.url}/readyz`)).text).toBe(String(service.pid));
  });

  it('reports a process that exits before it is ready, with its output', async () => {
    const service = await fixture('crash');
    await expect(service.start()).rejects.toThrow(
      /exited before it was ready \(exit code 3\)[^]*fixture crashed on purpose/,
    );
  });

  it('gives up on a process that never becomes ready, and kills it', async () => {
    const service = await fixture('never-ready', 600);
    await expect(service.start()).rejects.toThrow(
      /was not ready within 600 ms \(last \/readyz: HTTP 503/,
    );
    expect(service.isRunning).toBe(false);
  });

  it('moves to another port when the chosen one was taken meanwhile', async () => {
    // Destroys each connection so close() can finish (readiness polls may reach it).
    const blocker: Server = createServer((socket) => socket.destroy());
    const taken = await freePort();
    await new Promise<void>((resolve) => blocker.listen(taken, '127.0.0.1', resolve));
    try {
      const service = new ServiceProcess({
        name: 'gateway',
        port: taken,
        env: { PATH: process.env.PATH ?? '' },
        entryPoint,
      });
      started.push(service);
      await service.start(freePort);
      expect(service.port).not.toBe(taken);
      expect(service.output()).toContain('EADDRINUSE');
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('reads the CPU time used from /proc', async () => {
    const idle = await fixture('normal');
    const busy = await fixture('burn');
    await Promise.all([idle.start(), busy.start()]);
    expect(busy.cpuSeconds()!).toBeGreaterThanOrEqual(0.39);
    expect(busy.cpuSeconds()! - idle.cpuSeconds()!).toBeGreaterThan(0.2);
    await busy.stop();
    expect(busy.cpuSeconds()).toBeNull();
  });

  it('reads peak RSS from /proc', async () => {
    const small = await fixture('normal');
    const large = await fixture('memory');
    await Promise.all([small.start(), large.start()]);
    const largeNow = large.rssBytes()!;
    const smallPeak = small.peakRssBytes()!;
    const largePeak = large.peakRssBytes()!;
    expect(smallPeak).toBeGreaterThan(10 * 1024 * 1024);
    expect(largePeak - smallPeak).toBeGreaterThan(50 * 1024 * 1024);
    expect(largeNow).toBeLessThanOrEqual(largePeak);
    // The file-backed part is the node binary's pages, about the same in both: the large
    // fixture's extra memory is its own (anonymous).
    const smallFile = small.fileRssBytes()!;
    expect(smallFile).toBeGreaterThan(10 * 1024 * 1024);
    expect(smallFile).toBeLessThan(smallPeak);
    expect(Math.abs(large.fileRssBytes()! - smallFile)).toBeLessThan(10 * 1024 * 1024);
    expect(large.resetPeakRss()).toBe(true);
    expect(large.peakRssBytes()!).toBeLessThanOrEqual(largePeak + 4 * 1024 * 1024);
    await large.stop();
    expect(large.peakRssBytes()).toBeNull();
    expect(large.fileRssBytes()).toBeNull();
    expect(large.resetPeakRss()).toBe(false);
  });

  it('refuses to start a service that was not built', async () => {
    const service = new ServiceProcess({
      name: 'worker',
      port: await freePort(),
      env: {},
      entryPoint: join(dir, 'missing.js'),
    });
    await expect(service.start()).rejects.toThrow(/does not exist: build it first/);
  });
});
