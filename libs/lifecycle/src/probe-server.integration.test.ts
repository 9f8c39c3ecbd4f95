import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@linkservice/logger';
import { sendRequest } from '@linkservice/testing';
import type { ProbeOptions } from './probes';
import { createProbeServer } from './probe-server';

let server: Server | undefined;

afterEach(async () => {
  if (server) {
    server.close();
    await once(server, 'close');
  }
  server = undefined;
});

const logger = createLogger('lifecycle-test', 'silent');

async function serve(options: Omit<ProbeOptions, 'logger'>): Promise<string> {
  server = createProbeServer({ ...options, logger });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const ok = () => Promise.resolve();
const never = () => new Promise<never>(() => undefined);

describe("the probe server (the worker's only HTTP surface)", () => {
  it('answers /healthz and a ready /readyz', async () => {
    const base = await serve({ probes: { postgres: ok, redis: ok }, isShuttingDown: () => false });
    const health = await sendRequest(`${base}/healthz`);
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ status: 'ok' });
    const ready = await sendRequest(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready' });
  });

  it('is not ready when a dependency fails or hangs, naming which', async () => {
    const base = await serve({
      probes: { postgres: () => Promise.reject(new Error('down')), redis: never },
      isShuttingDown: () => false,
      timeoutMs: 100,
    });
    const started = Date.now();
    const ready = await sendRequest(`${base}/readyz`);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({
      error: 'unavailable',
      message: 'Not ready: postgres, redis did not answer.',
    });
  });

  it('is not ready while shutting down, but still alive', async () => {
    const base = await serve({ probes: { postgres: ok }, isShuttingDown: () => true });
    expect((await sendRequest(`${base}/readyz`)).status).toBe(503);
    expect((await sendRequest(`${base}/healthz`)).status).toBe(200);
  });

  it('puts X-Request-Id on every answer, echoing a sane one the caller sent', async () => {
    const base = await serve({ probes: { postgres: ok }, isShuttingDown: () => false });
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const path of ['/healthz', '/readyz', '/nope']) {
      expect((await sendRequest(`${base}${path}`)).headers.get('x-request-id')).toMatch(uuid);
    }
    const echoed = await sendRequest(`${base}/healthz`, { headers: { 'x-request-id': 'probe-1' } });
    expect(echoed.headers.get('x-request-id')).toBe('probe-1');
    const replaced = await sendRequest(`${base}/healthz`, { headers: { 'x-request-id': 'a b' } });
    expect(replaced.headers.get('x-request-id')).toMatch(uuid);
  });

  it('answers 404 for other paths and 405 for other methods', async () => {
    const base = await serve({ probes: {}, isShuttingDown: () => false });
    const missing = await sendRequest(`${base}/metrics`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ error: 'not_found' });
    const post = await sendRequest(`${base}/healthz`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });
});
