import { randomBytes } from 'node:crypto';
import type { ApiResponse } from '@linkservice/testing';
import { eventually, freePort, linkOf, sendRequest } from '@linkservice/testing';
import { stackLinkctl } from '../support/linkctl';
import type { ServiceName, Stack } from '../support/stack';
import { ALL_SERVICES, sendApiRequest, startRunStack } from '../support/stack';

/**
 * Each service's Prometheus endpoint, scraped after real traffic through the spawned stack: a
 * creation, a batch, a read, a redirect, a 404 redirect and a creation over the hourly limit.
 * Every metric of the issue is there with a sensible value, and no label names an app, a link
 * or an alias.
 */

jest.setTimeout(60_000);

/** One sample of the text format: `name{label="value",…} value`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    // The label group always takes part (empty without labels), so every group is a string.
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)((?:\{.*\})?) (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const [, name, labelText, value] = match;
    const labels: Record<string, string> = {};
    for (const [, key, labelValue] of labelText.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) {
      labels[key] = labelValue;
    }
    samples.push({ name, labels, value: Number(value) });
  }
  return samples;
}

/** The value of the one sample with these labels (a subset), or undefined. */
function valueOf(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  const found = samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches several`);
  return found[0]?.value;
}

const metricsPorts = {} as Record<ServiceName, number>;
let stack: Stack;
let secret: string;
let appId: string;
let subdomainKey: string;

async function scrape(service: ServiceName): Promise<{ text: string; samples: Sample[] }> {
  const res = await sendRequest(`http://127.0.0.1:${metricsPorts[service]}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const text = res.text;
  return { text, samples: parseSamples(text) };
}

function api(method: string, path: string, body?: unknown): Promise<ApiResponse> {
  return sendApiRequest(`${stack.apiUrl}${path}`, { method, key: secret, body });
}

function follow(alias: string) {
  return sendRequest(`${stack.redirect.url}/${alias}`, {
    host: `${subdomainKey}.${stack.linkDomain}`,
  });
}

beforeAll(async () => {
  for (const service of ALL_SERVICES) metricsPorts[service] = await freePort();
  stack = await startRunStack({
    // Three creations: the single one and the batch of two; the next is refused with 429.
    creationLimitPerHour: 3,
    serviceEnv: {
      gateway: { METRICS_PORT: String(metricsPorts.gateway) },
      worker: { METRICS_PORT: String(metricsPorts.worker) },
      redirect: { METRICS_PORT: String(metricsPorts.redirect) },
    },
  });
  subdomainKey = `metrics-${randomBytes(4).toString('hex')}`;
  const created = (await stackLinkctl(
    stack,
    'app',
    'create',
    '--name',
    'Metrics Inc',
    '--subdomain',
    subdomainKey,
  )) as { app: { id: string } };
  appId = created.app.id;
  const key = (await stackLinkctl(stack, 'key', 'create', '--app', appId, '--env', 'live')) as {
    secret: string;
  };
  secret = key.secret;
});

afterAll(async () => {
  await stack.stop();
});

it('serves each service’s metrics after a creation, a batch, a read and redirects', async () => {
  const alias = `metric-${randomBytes(3).toString('hex')}`;
  const created = await api('POST', '/links', {
    alias,
    webFallbackUrl: 'https://metrics.example/a',
  });
  expect(created.status).toBe(201);
  const link = linkOf(created);
  const batch = await api('POST', '/links/batch', {
    links: [
      { webFallbackUrl: 'https://metrics.example/b' },
      { webFallbackUrl: 'https://metrics.example/c' },
    ],
  });
  expect(batch.status).toBe(201);
  expect((await api('GET', `/links/${link.id}`)).status).toBe(200);
  const refused = await api('POST', '/links', { webFallbackUrl: 'https://metrics.example/d' });
  expect(refused.status).toBe(429);
  expect((await follow(alias)).status).toBe(302);
  const unknownAlias = `nothing-${randomBytes(3).toString('hex')}`;
  expect((await follow(unknownAlias)).status).toBe(404);
  // Paths no route knows, carrying ids: counted under `unmatched`, never under their path.
  expect((await api('GET', `/nothing/${link.id}`)).status).toBe(404);
  expect((await follow(`${alias}/${link.id}`)).status).toBe(404);

  // Gateway: the HTTP histogram by route pattern, the 429, the creation timeouts (none here).
  const gateway = await scrape('gateway');
  const http = 'http_server_request_duration_seconds_count';
  expect(
    valueOf(gateway.samples, http, { route: '/api/v1/links', method: 'POST', status: '201' }),
  ).toBe(1);
  expect(
    valueOf(gateway.samples, http, { route: '/api/v1/links', method: 'POST', status: '429' }),
  ).toBe(1);
  expect(
    valueOf(gateway.samples, http, { route: '/api/v1/links/batch', method: 'POST', status: '201' }),
  ).toBe(1);
  expect(
    valueOf(gateway.samples, http, {
      route: '/api/v1/links/:linkId',
      method: 'GET',
      status: '200',
    }),
  ).toBe(1);
  expect(valueOf(gateway.samples, http, { route: 'unmatched', method: 'GET', status: '404' })).toBe(
    1,
  );
  // The stack's readiness wait polled /readyz.
  expect(
    valueOf(gateway.samples, http, { route: '/readyz', method: 'GET', status: '200' }),
  ).toBeGreaterThanOrEqual(1);
  expect(valueOf(gateway.samples, 'linkservice_rate_limited_total', { limit: 'creation' })).toBe(1);
  expect(valueOf(gateway.samples, 'linkservice_rate_limited_total', { limit: 'sdk' })).toBe(0);
  expect(
    valueOf(gateway.samples, 'linkservice_creation_timeouts_total', { reason: 'timeout' }),
  ).toBe(0);

  // Worker: two completed jobs (the link, the batch) and the queue's counts.
  const worker = await scrape('worker');
  expect(valueOf(worker.samples, 'linkservice_creation_jobs_total', { outcome: 'completed' })).toBe(
    2,
  );
  expect(valueOf(worker.samples, 'linkservice_creation_jobs_total', { outcome: 'failed' })).toBe(0);
  expect(
    valueOf(worker.samples, 'linkservice_creation_job_duration_seconds_count', {
      outcome: 'completed',
    }),
  ).toBe(2);
  for (const state of ['waiting', 'active', 'delayed', 'failed']) {
    expect(valueOf(worker.samples, 'linkservice_queue_jobs', { state })).toBeGreaterThanOrEqual(0);
  }
  // Every creation was answered: nothing waits.
  expect(valueOf(worker.samples, 'linkservice_queue_oldest_waiting_seconds', {})).toBe(0);

  // Redirect: one redirect, one 404, the cache's answers, the click pipeline.
  const redirect = await scrape('redirect');
  expect(valueOf(redirect.samples, 'linkservice_redirects_total', { result: 'redirect' })).toBe(1);
  expect(valueOf(redirect.samples, 'linkservice_redirects_total', { result: 'not_found' })).toBe(1);
  expect(valueOf(redirect.samples, 'linkservice_redirects_total', { result: 'gone' })).toBe(0);
  const hits = valueOf(redirect.samples, 'linkservice_link_cache_requests_total', {
    result: 'hit',
  });
  const misses = valueOf(redirect.samples, 'linkservice_link_cache_requests_total', {
    result: 'miss',
  });
  expect((hits ?? 0) + (misses ?? 0)).toBe(2);
  expect(valueOf(redirect.samples, http, { route: '/:alias', method: 'GET', status: '302' })).toBe(
    1,
  );
  expect(valueOf(redirect.samples, http, { route: '/:alias', method: 'GET', status: '404' })).toBe(
    1,
  );
  expect(
    valueOf(redirect.samples, http, { route: 'unmatched', method: 'GET', status: '404' }),
  ).toBe(1);
  for (const state of ['unrecorded', 'uncertain', 'untokened']) {
    expect(valueOf(redirect.samples, 'linkservice_clicks_pending', { state })).toBe(0);
  }
  expect(valueOf(redirect.samples, 'linkservice_clicks_dropped_total')).toBe(0);
  // The flusher runs every second: the lag stays within a few seconds while all is well.
  await eventually(
    async () => {
      const lag = valueOf(
        (await scrape('redirect')).samples,
        'linkservice_click_flush_lag_seconds',
      );
      return lag !== undefined && lag >= 0 && lag < 5;
    },
    { timeoutMs: 5_000, intervalMs: 200 },
  );
  const flushed = (await scrape('redirect')).samples;
  for (const name of ['linkservice_click_flush_fields', 'linkservice_click_flush_statements']) {
    expect(valueOf(flushed, name)).toBeDefined();
  }

  // Node's process and event-loop metrics on every service; nothing names an app, link or alias.
  const secrets = [appId, link.id, alias, unknownAlias, subdomainKey, 'nothing/'];
  for (const { text, samples } of [gateway, worker, redirect]) {
    expect(valueOf(samples, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(valueOf(samples, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    for (const value of secrets) expect(text).not.toContain(value);
    for (const sample of samples) {
      for (const label of Object.values(sample.labels)) {
        expect(label).not.toMatch(/lnk_|app_|crt_/);
      }
    }
  }
});

it('answers 404 beside /metrics and keeps metrics off the API port', async () => {
  const other = await sendRequest(`http://127.0.0.1:${metricsPorts.gateway}/healthz`);
  expect(other.status).toBe(404);
  const onApi = await sendRequest(`${stack.gateway.url}/metrics`);
  expect(onApi.status).toBe(404);
});
