import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { DbHandle } from '@linkservice/db';
import {
  eventually,
  linkOf,
  sendRequest,
  testDatabase,
  testEnvironment,
} from '@linkservice/testing';
import pg from 'pg';
import type { ReceivedSpan } from '../support/otlp-receiver';
import { OtlpReceiver, SPAN_KIND, spanTree } from '../support/otlp-receiver';
import type { Stack } from '../support/stack';
import { sendApiRequest, startRunStack } from '../support/stack';
import type { Tenant } from '../support/tenants';
import { createTenant } from '../support/tenants';

/**
 * The stack exporting its traces over OTLP/HTTP to a receiver inside the test: one creation is
 * one trace, from the gateway's request span through BullMQ's producer and consumer spans to the
 * worker's SQL, and the spans carry what an on-call engineer searches by, never a secret.
 */

jest.setTimeout(60_000);

const LOCK_HELD_MS = 2_000;

let receiver: OtlpReceiver;
let stack: Stack;
let postgres: DbHandle;
let tenant: Tenant;

/** Markers that must never leave the services: in deepLinkData and in a fallback URL's query. */
const deepLinkMarker = `dld-${randomBytes(8).toString('hex')}`;
const fallbackMarker = `fbq-${randomBytes(8).toString('hex')}`;
/** What a person's click brings along: a query of its own (a token with it) and a user agent. */
const endUserMarker = `euq${randomBytes(8).toString('hex')}`;
const endUserQuery = `utm_source=${endUserMarker}&ls_click=${endUserMarker}`;
const endUserAgent = `Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Marker/${endUserMarker}`;

function draft(): Record<string, unknown> {
  return {
    webFallbackUrl: `https://trace.example/landing?token=${fallbackMarker}`,
    deepLinkData: { screen: 'promo', marker: deepLinkMarker },
  };
}

function post(path: string, body: unknown, requestId: string) {
  return sendApiRequest(`${stack.apiUrl}${path}`, {
    method: 'POST',
    key: tenant.live.secret,
    body,
    headers: { 'x-request-id': requestId },
    timeoutMs: 20_000,
  });
}

function one(spans: readonly ReceivedSpan[], what: string, test: (span: ReceivedSpan) => boolean) {
  const found = spans.filter(test);
  if (found.length !== 1) {
    throw new Error(`expected one ${what}, found ${found.length}:\n${spanTree(spans)}`);
  }
  return found[0];
}

function isSql(span: ReceivedSpan): boolean {
  return span.kind === SPAN_KIND.client && span.attributes['db.system.name'] === 'postgresql';
}

/** True when `ancestor` is `span`'s parent, grandparent, …, within `spans`. */
function descends(spans: readonly ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan) {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  for (let at = span.parentSpanId; at !== undefined; at = byId.get(at)?.parentSpanId) {
    if (at === ancestor.spanId) return true;
  }
  return false;
}

interface CreationTrace {
  spans: ReceivedSpan[];
  server: ReceivedSpan;
  producer: ReceivedSpan;
  consumer: ReceivedSpan;
  sql: ReceivedSpan[];
}

/**
 * Waits until the trace of the request with this X-Request-Id holds the gateway's server span,
 * the producer span, the worker's consumer span and its SQL, then returns them.
 */
async function creationTrace(requestId: string): Promise<CreationTrace> {
  return eventually(
    () => {
      const server = receiver.spans.find(
        (span) =>
          span.kind === SPAN_KIND.server && span.attributes['linkservice.request_id'] === requestId,
      );
      if (!server) return false;
      const spans = receiver.trace(server.traceId);
      const consumer = spans.find((span) => span.kind === SPAN_KIND.consumer);
      if (!consumer || !spans.some((span) => isSql(span) && descends(spans, span, consumer))) {
        return false;
      }
      const producer = one(spans, 'producer span', (span) => span.kind === SPAN_KIND.producer);
      const sql = spans.filter((span) => isSql(span) && descends(spans, span, consumer));
      return { spans, server, producer, consumer, sql };
    },
    { timeoutMs: 15_000, intervalMs: 100 },
  ).catch((error: unknown) => {
    throw new Error(
      `no whole trace for ${requestId}: ${String(error)}\n${spanTree(receiver.spans)}\n${stack.output()}`,
    );
  });
}

beforeAll(async () => {
  receiver = await OtlpReceiver.start();
  stack = await startRunStack({
    otlpEndpoint: receiver.url,
    env: { DEPLOYMENT_ENVIRONMENT: 'e2e' },
  });
  postgres = testDatabase(2);
  tenant = await createTenant(postgres.db);
});

afterAll(async () => {
  await stack.stop();
  await postgres.close();
  await receiver.close();
});

describe('one creation is one trace', () => {
  it('runs from the gateway span through the job to the worker SQL, with the ids to search by', async () => {
    const requestId = `req-trace-${randomBytes(4).toString('hex')}`;
    const res = await post('/links', draft(), requestId);
    expect(res.status).toBe(201);
    const linkId = linkOf(res).id;

    const { spans, server, producer, consumer, sql } = await creationTrace(requestId);
    expect(server.name).toBe('POST /api/v1/links');
    expect(server.parentSpanId).toBeUndefined();
    expect(server.resource).toMatchObject({
      'service.name': 'linkservice-gateway',
      'service.version': '0.1.0',
      'deployment.environment': 'e2e',
    });
    expect(server.attributes).toMatchObject({
      'http.route': '/api/v1/links',
      'linkservice.app_id': tenant.appId,
      'linkservice.environment': 'live',
      'linkservice.request_id': requestId,
      'linkservice.job_id': expect.stringMatching(/^crt_/),
      'linkservice.link_id': linkId,
      'linkservice.entries': 1,
    });
    const jobId = server.attributes['linkservice.job_id'];

    expect(descends(spans, producer, server)).toBe(true);
    expect(producer.resource['service.name']).toBe('linkservice-gateway');
    expect(consumer.parentSpanId).toBe(producer.spanId);
    expect(consumer.resource).toMatchObject({
      'service.name': 'linkservice-worker',
      'deployment.environment': 'e2e',
    });
    expect(consumer.attributes).toMatchObject({
      'linkservice.app_id': tenant.appId,
      'linkservice.environment': 'live',
      'linkservice.request_id': requestId,
      'linkservice.job_id': jobId,
      'linkservice.link_id': linkId,
      'linkservice.entries': 1,
    });
    // The job's statements: a lone creation of one link is one statement (claim, insert and
    // outcome together), under the consumer span like a group's transaction.
    expect(sql.length).toBeGreaterThanOrEqual(1);
    expect(sql.every((span) => span.resource['service.name'] === 'linkservice-worker')).toBe(true);
    // Express layers are collapsed into the server span.
    expect(spans.filter((span) => 'express.type' in span.attributes)).toEqual([]);
  });

  it('holds for a batch too, with its entry count', async () => {
    const requestId = `req-trace-${randomBytes(4).toString('hex')}`;
    const res = await post('/links/batch', { links: [draft(), draft(), { alias: '' }] }, requestId);
    expect(res.status).toBe(207);

    const { server, consumer } = await creationTrace(requestId);
    expect(server.name).toBe('POST /api/v1/links/batch');
    expect(server.attributes).toMatchObject({
      'linkservice.app_id': tenant.appId,
      'linkservice.entries': 3,
    });
    expect(consumer.attributes).toMatchObject({
      'linkservice.job_id': server.attributes['linkservice.job_id'],
      'linkservice.entries': 2,
      'linkservice.entries_created': 2,
    });
  });

  it('shows a creation slowed by a held app row lock: the slow statement sits in the request trace', async () => {
    const locker = new pg.Client({ connectionString: testEnvironment().databaseUrl });
    await locker.connect();
    const requestId = `req-slow-${randomBytes(4).toString('hex')}`;
    let res;
    try {
      // What a long creation or a migration would hold: the row every creation of the app locks.
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM apps WHERE id = $1 FOR NO KEY UPDATE', [tenant.appId]);
      const creating = post('/links', draft(), requestId);
      await delay(LOCK_HELD_MS);
      await locker.query('COMMIT');
      res = await creating;
    } finally {
      await locker.end();
    }
    expect(res.status).toBe(201);

    const { spans, server, consumer, sql } = await creationTrace(requestId);
    const slowest = [...sql].sort((a, b) => b.durationMs - a.durationMs)[0];
    expect(server.durationMs).toBeGreaterThanOrEqual(LOCK_HELD_MS * 0.9);
    expect(slowest.durationMs).toBeGreaterThanOrEqual(LOCK_HELD_MS * 0.8);
    expect(slowest.traceId).toBe(server.traceId);
    expect(descends(spans, slowest, consumer)).toBe(true);
    expect(slowest.attributes['db.query.text']).toContain('FOR NO KEY UPDATE');
    // The figure for the README and the issue: the tree, durations and all.
    process.stderr.write(`\nslow creation, trace ${server.traceId}:\n${spanTree(spans)}\n`);
  });
});

describe('the redirect', () => {
  it('names its server span by route and reports the port it listens on', async () => {
    const created = await post('/links', draft(), `req-redirect-${randomBytes(4).toString('hex')}`);
    const { alias } = linkOf(created);
    // A person's click, with a query of their own and a token as an app would pass one on.
    const res = await sendRequest(`${stack.redirect.url}/${alias}?${endUserQuery}`, {
      host: `${tenant.subdomainKey}.${stack.linkDomain}`,
      headers: { 'user-agent': endUserAgent },
    });
    expect(res.status).toBe(302);

    const span = await eventually(
      () =>
        receiver.spans.find(
          (s) => s.kind === SPAN_KIND.server && s.attributes['url.path'] === `/${alias}`,
        ),
      { timeoutMs: 5_000, intervalMs: 100 },
    );
    expect(span.name).toBe('GET /:alias');
    expect(span.resource['service.name']).toBe('linkservice-redirect');
    expect(span.attributes).toMatchObject({
      'http.route': '/:alias',
      'server.port': Number(new URL(stack.redirect.url).port),
    });
    // Nothing of the person who followed it: no query, user agent or address.
    for (const name of ['url.query', 'user_agent.original', 'client.address']) {
      expect(span.attributes).not.toHaveProperty([name]);
    }
  });
});

describe('exported spans', () => {
  it('carry no key, deepLinkData or fallback URL query', async () => {
    // Let the services flush what they still hold (OTEL_BSP_SCHEDULE_DELAY is 100 ms).
    await delay(500);
    const exported = receiver.rawBodies.join('\n');
    expect(exported).toContain(tenant.appId);
    expect(exported).not.toContain(tenant.live.secret);
    expect(exported).not.toContain(deepLinkMarker);
    expect(exported).not.toContain(fallbackMarker);
    expect(exported).not.toContain(endUserMarker);
    expect(exported).not.toContain(endUserAgent);
  });
});
