import { ownDatabase } from '@linkservice/testing';
import type { DbHandle } from '@linkservice/db';
import { createLogger } from '@linkservice/logger';
import { Queue } from 'bullmq';
import type { WorkerResources } from '../deps';
import { buildDeps } from '../deps';
import { createTenant, eventually, insertLink } from '@linkservice/testing';
import { Webhook } from 'standardwebhooks';
import type { ReceivedRequest, TestDeliveryWorker } from '../testing/webhook-harness';
import { deliveryQueuePrefix, WEBHOOK_DELIVERIES_QUEUE } from './delivery-job.contract';
import { WebhookRelay } from './webhook-relay';
import {
  answerWith,
  deliveryOf,
  deliveryTestConfig,
  emitLinkEvent,
  insertEndpoint,
  startTestDelivery,
  TestReceiver,
} from '../testing/webhook-harness';

/**
 * Webhook delivery end to end, with real receivers (HTTP servers on 127.0.0.1): the outbox rows
 * as the producers write them, the relay, BullMQ, the signed attempts and their recording. On a
 * database of this file's own: a relay claims every due delivery of its database.
 */
let postgres: DbHandle & { url: string; drop(): Promise<void> };
const receivers: TestReceiver[] = [];

beforeAll(async () => {
  postgres = await ownDatabase();
});
afterAll(async () => {
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await postgres.drop();
});

async function receiver(...args: Parameters<typeof TestReceiver.start>): Promise<TestReceiver> {
  const started = await TestReceiver.start(...args);
  receivers.push(started);
  return started;
}

/** Verifies a request as a receiver would, with the standardwebhooks package. */
function verified(request: ReceivedRequest, secret: string): unknown {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  });
}

/** A tenant with one link, an endpoint at `url`, and the link's created event. */
async function scenario(
  worker: TestDeliveryWorker,
  url: string,
  endpoint: Partial<Parameters<typeof insertEndpoint>[2]> = {},
) {
  const db = postgres.db;
  const tenant = await createTenant(db);
  const created = await insertEndpoint(db, worker.config, {
    appId: tenant.appId,
    url,
    ...endpoint,
  });
  const link = await insertLink(db, { appId: tenant.appId, environment: 'test' });
  const eventId = await emitLinkEvent(db, link.id);
  if (!eventId) throw new Error('no event written: the endpoint does not subscribe');
  return { tenant, endpoint: created, link, eventId };
}

function metricsText(worker: TestDeliveryWorker): Promise<string> {
  return worker.resources.deps.metrics.registry.metrics();
}

function sampleOf(text: string, series: string): number {
  const line = text.split('\n').find((entry) => entry.startsWith(`${series} `));
  return line ? Number(line.split(' ')[1]) : Number.NaN;
}

async function statusOf(eventId: string, endpointId: string): Promise<string> {
  return (await deliveryOf(postgres.db, eventId, endpointId)).status;
}

describe('the relay', () => {
  let resources: WorkerResources;
  let queue: Queue;
  let relay: WebhookRelay;
  const options = { claimLimit: 200, staleAfterMs: 60_000, maxWaitingJobs: 100, maxPerJob: 50 };

  beforeAll(() => {
    const config = deliveryTestConfig(postgres.url);
    resources = buildDeps(config, createLogger('relay-test', 'silent'), {
      clients: (opened) => ({ ...opened, db: postgres.db }),
    });
    const { deps } = resources;
    queue = new Queue(WEBHOOK_DELIVERIES_QUEUE, {
      connection: deps.queueRedis,
      prefix: deliveryQueuePrefix(config.REDIS_PREFIX, false),
    });
    relay = new WebhookRelay(
      { repository: deps.webhookRelay, queue, metrics: deps.metrics.webhooks, logger: deps.logger },
      { ...options, intervalMs: 1_000 },
    );
  });
  afterAll(async () => {
    await relay.stop();
    await queue.close();
    await resources.close();
  });

  const backlogAge = async (): Promise<number> =>
    sampleOf(
      await resources.deps.metrics.registry.metrics(),
      'linkservice_webhook_backlog_age_seconds',
    );

  test('claims due deliveries first in line into jobs that name them only; measures the backlog', async () => {
    const db = postgres.db;
    const tenant = await createTenant(db);
    const endpoint = await insertEndpoint(db, resources.deps.config, {
      appId: tenant.appId,
      url: 'https://example.com/hooks?secret=abc',
    });
    const link = await insertLink(db, { appId: tenant.appId, environment: 'test' });
    const first = (await emitLinkEvent(db, link.id))!;
    const second = (await emitLinkEvent(db, link.id, 'link.updated'))!;
    await db
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: new Date(Date.now() - 30_000) })
      .where('endpoint_id', '=', endpoint.id)
      .execute();

    expect(await relay.pass()).toEqual({ kind: 'claimed', count: 1 });
    expect(await backlogAge()).toBeGreaterThanOrEqual(30);
    const firstDelivery = await deliveryOf(db, first, endpoint.id);
    expect(firstDelivery.enqueued_at).not.toBeNull();
    // The second waits behind the first (same endpoint and subject).
    expect((await deliveryOf(db, second, endpoint.id)).enqueued_at).toBeNull();
    const jobs = await queue.getJobs(['wait']);
    expect(jobs.map((job) => job.data as unknown)).toEqual([
      { deliveries: [{ deliveryId: firstDelivery.id, attempt: 1 }] },
    ]);

    // Enqueued, not stale: not claimed again.
    expect(await relay.pass()).toEqual({ kind: 'claimed', count: 0 });
    // Stale (its job lost): claimed again, into the same job id, so the queue holds it once.
    await db
      .updateTable('webhook_deliveries')
      .set({ enqueued_at: new Date(Date.now() - 61_000) })
      .where('id', '=', firstDelivery.id)
      .execute();
    expect(await relay.pass()).toEqual({ kind: 'claimed', count: 1 });
    expect(await queue.getJobs(['wait'])).toHaveLength(1);

    // A disabled endpoint's deliveries are not claimed, nor counted in the backlog.
    await db
      .updateTable('webhook_endpoints')
      .set({ disabled_at: new Date(), disabled_reason: 'requested' })
      .where('id', '=', endpoint.id)
      .execute();
    await db
      .updateTable('webhook_deliveries')
      .set({ enqueued_at: null })
      .where('endpoint_id', '=', endpoint.id)
      .execute();
    expect(await relay.pass()).toEqual({ kind: 'claimed', count: 0 });
    expect(await backlogAge()).toBe(0);
  });

  test('claims nothing while the queue holds enough waiting jobs', async () => {
    const full = new WebhookRelay(
      {
        repository: resources.deps.webhookRelay,
        queue,
        metrics: resources.deps.metrics.webhooks,
        logger: resources.deps.logger,
      },
      { ...options, intervalMs: 1_000, maxWaitingJobs: 1 },
    );
    expect(await queue.getWaitingCount()).toBeGreaterThanOrEqual(1);
    const tenant = await createTenant(postgres.db);
    const endpoint = await insertEndpoint(postgres.db, resources.deps.config, {
      appId: tenant.appId,
      url: 'https://example.com/hooks',
    });
    const link = await insertLink(postgres.db, { appId: tenant.appId, environment: 'test' });
    const eventId = (await emitLinkEvent(postgres.db, link.id))!;
    expect(await full.pass()).toEqual({ kind: 'queue_full' });
    expect((await deliveryOf(postgres.db, eventId, endpoint.id)).enqueued_at).toBeNull();
    // Not left due for the workers of the next describes.
    await postgres.db.deleteFrom('webhook_endpoints').where('id', '=', endpoint.id).execute();
  });
});

describe('webhook delivery to receivers on this host (allowed by WEBHOOK_ALLOWED_CIDRS)', () => {
  let worker: TestDeliveryWorker;
  beforeAll(async () => {
    worker = await startTestDelivery(postgres.db, deliveryTestConfig(postgres.url), {
      // receiver.test: a name only this resolver knows, to see the connection pinned to it.
      resolve: (host) =>
        host === 'receiver.test'
          ? Promise.resolve([{ address: '127.0.0.1', family: 4 }])
          : Promise.reject(new Error(`unknown host ${host}`)),
    });
  });
  afterAll(async () => {
    await worker.close();
  });

  test('delivers a signed event: the body, the headers, the delivery and its attempt recorded', async () => {
    const hook = await receiver();
    const { endpoint, link, eventId } = await scenario(worker, hook.url('/hooks?token=abc'));
    await eventually(() => hook.requests.length === 1, { what: 'the event received' });
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'delivered', {
      what: 'the delivery recorded',
    });

    const [request] = hook.requests;
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/hooks?token=abc');
    expect(request.headers['webhook-id']).toBe(eventId);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toBe('linkservice-webhooks');
    const timestamp = Number(request.headers['webhook-timestamp']);
    expect(Math.abs(timestamp - Date.now() / 1000)).toBeLessThan(30);
    expect(String(request.headers['webhook-signature'])).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(verified(request, endpoint.secret)).toMatchObject({
      type: 'link.created',
      data: { id: link.id, alias: link.alias },
    });
    // Another secret does not verify it.
    expect(() => verified(request, `whsec_${Buffer.alloc(32, 1).toString('base64')}`)).toThrow();

    const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 1, enqueued_at: null });
    expect(delivery.finished_at).not.toBeNull();
    expect(delivery.attemptRows).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'succeeded', response_status: 200 }),
    ]);
    expect(
      sampleOf(
        await metricsText(worker),
        'linkservice_webhook_attempts_total{outcome="succeeded"}',
      ),
    ).toBeGreaterThanOrEqual(1);
  });

  test('connects to the addresses checked, under the URL host name', async () => {
    const hook = await receiver();
    const { endpoint, eventId } = await scenario(worker, hook.url('/hooks', 'receiver.test'));
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'delivered', {
      what: 'the delivery to receiver.test',
    });
    expect(hook.requests[0].headers.host).toBe(`receiver.test:${hook.port}`);
  });

  test('signs with the previous secret too while it has not expired', async () => {
    const hook = await receiver();
    const previous = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const { endpoint, eventId } = await scenario(worker, hook.url(), {
      previousSecret: { secret: previous, expiresAt: new Date(Date.now() + 3_600_000) },
    });
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'delivered');
    const [request] = hook.requests;
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verified(request, endpoint.secret)).toMatchObject({ type: 'link.created' });
    expect(verified(request, previous)).toMatchObject({ type: 'link.created' });

    // Expired: the new secret alone signs.
    const expiredHook = await receiver();
    const expired = await scenario(worker, expiredHook.url(), {
      previousSecret: { secret: previous, expiresAt: new Date(Date.now() - 1_000) },
    });
    await eventually(
      async () => (await statusOf(expired.eventId, expired.endpoint.id)) === 'delivered',
    );
    const [late] = expiredHook.requests;
    expect(String(late.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => verified(late, previous)).toThrow();
    expect(verified(late, expired.endpoint.secret)).toMatchObject({ type: 'link.created' });
  });

  test('a receiver slower than WEBHOOK_TIMEOUT_MS: a timeout, retried with the same webhook-id', async () => {
    const hook = await receiver((_request, response, index) => {
      // The first answer comes after the 1 s timeout; the next at once.
      if (index === 0) setTimeout(() => response.writeHead(200).end(), 2_500);
      else response.writeHead(200).end('ok');
    });
    const { endpoint, eventId } = await scenario(worker, hook.url());
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'delivered', {
      what: 'delivered on the second attempt',
    });
    const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
    expect(delivery.attemptRows.map((row) => row.outcome)).toEqual(['timeout', 'succeeded']);
    expect(delivery.attemptRows[0].duration_ms).toBeGreaterThanOrEqual(900);
    expect(delivery.attemptRows[0].duration_ms).toBeLessThan(2_000);
    expect(hook.ids).toEqual([eventId, eventId]);
  });

  test('a failing receiver that recovers: delivered, every attempt logged with an excerpt', async () => {
    const hook = await receiver((_request, response, index) => {
      if (index < 2) response.writeHead(500).end(`down ${'x'.repeat(1_000)}`);
      else response.writeHead(204).end();
    });
    const { endpoint, eventId } = await scenario(worker, hook.url());
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'delivered');
    const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
    expect(delivery.attempts).toBe(3);
    expect(delivery.attemptRows.map((row) => [row.outcome, row.response_status])).toEqual([
      ['http_error', 500],
      ['http_error', 500],
      ['succeeded', 204],
    ]);
    // A short excerpt, never the whole answer.
    expect(delivery.attemptRows[0].response_excerpt).toMatch(/^down x+$/);
    expect(delivery.attemptRows[0].response_excerpt!.length).toBeLessThanOrEqual(256);
    expect(hook.ids).toEqual([eventId, eventId, eventId]);
    const row = await postgres.db
      .selectFrom('webhook_endpoints')
      .select(['failing_since', 'disabled_at'])
      .where('id', '=', endpoint.id)
      .executeTakeFirstOrThrow();
    // The success cleared what the failures started.
    expect(row).toEqual({ failing_since: null, disabled_at: null });
  });

  test('a receiver failing every attempt: failed once the schedule runs out', async () => {
    const hook = await receiver(answerWith(503));
    const { endpoint, eventId } = await scenario(worker, hook.url());
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'failed');
    const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
    // WEBHOOK_RETRY_SCHEDULE 0,0.2,0.2,0.2: four attempts.
    expect(delivery.attempts).toBe(4);
    expect(delivery.finished_at).not.toBeNull();
    expect(hook.requests).toHaveLength(4);
    const row = await postgres.db
      .selectFrom('webhook_endpoints')
      .select(['failing_since', 'disabled_at'])
      .where('id', '=', endpoint.id)
      .executeTakeFirstOrThrow();
    expect(row.failing_since).not.toBeNull();
    expect(row.disabled_at).toBeNull();
  });

  test('a 410 disables the endpoint (gone); its delivery waits, nothing more is sent', async () => {
    const hook = await receiver(answerWith(410));
    const before = sampleOf(
      await metricsText(worker),
      'linkservice_webhook_endpoints_disabled_total{reason="gone"}',
    );
    const { tenant, endpoint, eventId } = await scenario(worker, hook.url());
    await eventually(
      async () => {
        const row = await postgres.db
          .selectFrom('webhook_endpoints')
          .select(['disabled_at', 'disabled_reason'])
          .where('id', '=', endpoint.id)
          .executeTakeFirstOrThrow();
        return row.disabled_reason === 'gone' && row.disabled_at !== null;
      },
      { what: 'the endpoint disabled' },
    );
    const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
    expect(delivery.status).toBe('pending');
    expect(delivery.attemptRows.map((row) => [row.outcome, row.response_status])).toEqual([
      ['gone', 410],
    ]);
    expect(
      sampleOf(
        await metricsText(worker),
        'linkservice_webhook_endpoints_disabled_total{reason="gone"}',
      ),
    ).toBe(before + 1);

    // A fence: another endpoint's event, written after the retry fell due, is delivered; by
    // then the relay has passed over the disabled endpoint's delivery several times.
    const fenceHook = await receiver();
    const fence = await insertEndpoint(postgres.db, worker.config, {
      appId: tenant.appId,
      url: fenceHook.url(),
    });
    const fenceLink = await insertLink(postgres.db, { appId: tenant.appId, environment: 'test' });
    const fenceEvent = await emitLinkEvent(postgres.db, fenceLink.id);
    await eventually(async () => (await statusOf(fenceEvent!, fence.id)) === 'delivered');
    expect(hook.requests).toHaveLength(1);
  });

  test('a redirect is not followed: its target sees nothing, the attempt is an http_error', async () => {
    const target = await receiver();
    const hook = await receiver((_request, response) => {
      response.writeHead(302, { location: target.url('/elsewhere') }).end();
    });
    const { endpoint, eventId } = await scenario(worker, hook.url());
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'failed');
    const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
    expect(delivery.attemptRows.map((row) => [row.outcome, row.response_status])).toEqual(
      Array(4).fill(['http_error', 302]),
    );
    expect(hook.requests).toHaveLength(4);
    expect(target.requests).toHaveLength(0);
  });

  test("one subject's events arrive in order while the first is retried", async () => {
    const hook = await receiver((_request, response, index) => {
      response.writeHead(index < 2 ? 500 : 200).end();
    });
    const { endpoint, link, eventId: first } = await scenario(worker, hook.url());
    const second = await emitLinkEvent(postgres.db, link.id, 'link.updated');
    const third = await emitLinkEvent(postgres.db, link.id, 'link.updated');
    await eventually(async () => (await statusOf(third!, endpoint.id)) === 'delivered', {
      what: 'the third event delivered',
    });
    // The second and third wait while the first is retried.
    expect(hook.ids).toEqual([first, first, first, second, third]);
  });

  test('two subjects do not wait for each other', async () => {
    const db = postgres.db;
    const tenant = await createTenant(db);
    const [stuck, other] = await Promise.all([
      insertLink(db, { appId: tenant.appId, environment: 'test' }),
      insertLink(db, { appId: tenant.appId, environment: 'test' }),
    ]);
    // The stuck link's attempts are never answered: each lasts the 1 s timeout, four in all.
    const hook = await receiver((request, response) => {
      const { data } = JSON.parse(request.body) as { data: { id: string } };
      if (data.id !== stuck.id) response.writeHead(200).end();
    });
    const endpoint = await insertEndpoint(db, worker.config, {
      appId: tenant.appId,
      url: hook.url(),
    });
    const stuckEvent = await emitLinkEvent(db, stuck.id);
    await eventually(() => hook.requests.length === 1, { what: 'the stuck attempt under way' });
    const otherEvent = await emitLinkEvent(db, other.id);
    await eventually(async () => (await statusOf(otherEvent!, endpoint.id)) === 'delivered');
    // Delivered while the other subject's event still waits for its first answer or retry.
    expect(await statusOf(stuckEvent!, endpoint.id)).toBe('pending');
  });

  test('a batch of 100 events is all delivered, each once', async () => {
    const hook = await receiver();
    const db = postgres.db;
    const tenant = await createTenant(db);
    const endpoint = await insertEndpoint(db, worker.config, {
      appId: tenant.appId,
      url: hook.url(),
    });
    const events: string[] = [];
    for (let index = 0; index < 100; index += 1) {
      const link = await insertLink(db, { appId: tenant.appId, environment: 'test' });
      events.push((await emitLinkEvent(db, link.id))!);
    }
    await eventually(
      async () => {
        const { count } = await db
          .selectFrom('webhook_deliveries')
          .select((eb) => eb.fn.countAll<number>().as('count'))
          .where('endpoint_id', '=', endpoint.id)
          .where('status', '=', 'delivered')
          .executeTakeFirstOrThrow();
        return Number(count) === 100;
      },
      { what: '100 deliveries', timeoutMs: 20_000 },
    );
    expect(new Set(hook.ids)).toEqual(new Set(events));
    expect(hook.requests).toHaveLength(100);
  });

  test('an endpoint failing for 5 days is disabled (failing)', async () => {
    const hook = await receiver(answerWith(500));
    const failingSince = new Date(Date.now() - 5 * 24 * 3_600_000 - 60_000);
    const { endpoint } = await scenario(worker, hook.url(), { failingSince });
    await eventually(
      async () => {
        const row = await postgres.db
          .selectFrom('webhook_endpoints')
          .select(['disabled_reason', 'failing_since'])
          .where('id', '=', endpoint.id)
          .executeTakeFirstOrThrow();
        return row.disabled_reason === 'failing' ? row : undefined;
      },
      { what: 'the endpoint disabled for failing' },
    );
    expect(hook.requests).toHaveLength(1);
    expect(
      sampleOf(
        await metricsText(worker),
        'linkservice_webhook_endpoints_disabled_total{reason="failing"}',
      ),
    ).toBeGreaterThanOrEqual(1);
  });

  test('an endpoint failing for less than 5 days stays enabled', async () => {
    const hook = await receiver(answerWith(500));
    const failingSince = new Date(Date.now() - 4 * 24 * 3_600_000);
    const { endpoint, eventId } = await scenario(worker, hook.url(), { failingSince });
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'failed');
    const row = await postgres.db
      .selectFrom('webhook_endpoints')
      .select(['disabled_at', 'failing_since'])
      .where('id', '=', endpoint.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ disabled_at: null, failing_since: failingSince });
  });
});

describe('webhook delivery without WEBHOOK_ALLOWED_CIDRS', () => {
  let worker: TestDeliveryWorker;
  beforeAll(async () => {
    worker = await startTestDelivery(
      postgres.db,
      deliveryTestConfig(postgres.url, { WEBHOOK_ALLOWED_CIDRS: '' }),
      {
        resolve: (host) =>
          host === 'private.test'
            ? Promise.resolve([
                { address: '203.0.113.7', family: 4 },
                { address: '10.0.0.1', family: 4 },
              ])
            : Promise.reject(new Error(`unknown host ${host}`)),
      },
    );
  });
  afterAll(async () => {
    await worker.close();
  });

  test('a receiver on 127.0.0.1 is refused: it sees no request', async () => {
    const hook = await receiver();
    const { endpoint, eventId } = await scenario(worker, hook.url());
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'failed');
    const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
    expect(delivery.attemptRows.map((row) => row.outcome)).toEqual(
      Array(4).fill('refused_address'),
    );
    expect(hook.requests).toHaveLength(0);
  });

  test('a name with one private address among public ones is refused', async () => {
    const { endpoint, eventId } = await scenario(worker, 'http://private.test/hooks');
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'failed');
    const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
    expect(delivery.attemptRows[0].outcome).toBe('refused_address');
  });

  test('a name that does not resolve is unresolvable', async () => {
    const { endpoint, eventId } = await scenario(worker, 'http://nowhere.test/hooks');
    await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'failed');
    const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
    expect(delivery.attemptRows.map((row) => row.outcome)).toEqual(Array(4).fill('unresolvable'));
    expect(
      sampleOf(
        await metricsText(worker),
        'linkservice_webhook_attempts_total{outcome="unresolvable"}',
      ),
    ).toBeGreaterThanOrEqual(4);
  });
});

describe('a worker killed mid-delivery', () => {
  test('another worker delivers the event, with the same webhook-id; the killed one records nothing', async () => {
    const recovery = { lockDurationMs: 1_000, stalledIntervalMs: 500, staleAfterMs: 3_000 };
    // A long timeout: the killed worker's attempt would otherwise end (and try to record) on its own.
    const config = deliveryTestConfig(postgres.url, { WEBHOOK_TIMEOUT_MS: '20000' });
    const first = await startTestDelivery(postgres.db, config, recovery);
    let second: TestDeliveryWorker | undefined;
    // The first request is held until the end of the test; the next ones are answered.
    const held: { release?: () => void } = {};
    const hook = await receiver((_request, response, index) => {
      if (index === 0) held.release = () => response.writeHead(200).end();
      else response.writeHead(200).end();
    });
    try {
      const { endpoint, eventId } = await scenario(first, hook.url());
      await eventually(() => hook.requests.length === 1, { what: 'the first attempt held' });
      await first.delivery.kill();
      second = await startTestDelivery(postgres.db, config, recovery);
      await eventually(async () => (await statusOf(eventId, endpoint.id)) === 'delivered', {
        what: 'delivered by the second worker',
        timeoutMs: 20_000,
      });
      expect(hook.ids).toEqual([eventId, eventId]);
      const delivery = await deliveryOf(postgres.db, eventId, endpoint.id);
      expect(delivery.attemptRows).toEqual([
        expect.objectContaining({ attempt: 1, outcome: 'succeeded' }),
      ]);
    } finally {
      held.release?.();
      await first.resources.close();
      await second?.close();
    }
  });
});
