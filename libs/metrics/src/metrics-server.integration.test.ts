import { createLogger } from '@linkservice/logger';
import { Counter, Registry } from 'prom-client';
import type { MetricsServer } from './metrics-server';
import { startMetricsServer } from './metrics-server';

describe('the metrics server', () => {
  let registry: Registry;
  let server: MetricsServer;
  let base: string;

  beforeAll(async () => {
    registry = new Registry();
    new Counter({ name: 'test_things_total', help: 'Things.', registers: [registry] }).inc(2);
    server = await startMetricsServer(registry, {
      port: 0,
      logger: createLogger('metrics-test', 'silent'),
    });
    base = `http://127.0.0.1:${server.port}`;
  });
  afterAll(() => {
    server.close();
  });

  it('serves the registry and Node’s process metrics at /metrics', async () => {
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe(registry.contentType);
    const text = await res.text();
    expect(text).toContain('test_things_total 2');
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
  });

  it('answers 404 elsewhere and 405 for other methods', async () => {
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/metrics/x`)).status).toBe(404);
    const post = await fetch(`${base}/metrics`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });
});
