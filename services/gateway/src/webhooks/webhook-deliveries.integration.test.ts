import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { WebhookDeliveryStatus } from '@linkservice/db';
import type { ApiResponse, Tenant } from '@linkservice/testing';
import { createTenant, ownDatabase } from '@linkservice/testing';
import type { WebhookEventType } from '@linkservice/webhooks';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';
import type { DeliveryPage, Webhook, WebhookDelivery } from './webhooks.service';

const PUBLIC_URL = 'https://93.184.215.14/hooks';
const NO_WEBHOOK = { error: 'not_found', message: 'No such webhook.' };
const NO_DELIVERY = { error: 'not_found', message: 'No such delivery.' };

let gateway: TestGateway;

let database: Awaited<ReturnType<typeof ownDatabase>>;

// A database of this file's own: every worker's relay acts on the due deliveries of its whole
// database (these are due and pending on purpose), and spawned test stacks run on the run's.
beforeAll(async () => {
  database = await ownDatabase(1);
  gateway = await startGateway({ env: { DATABASE_URL: database.url } });
});
afterAll(async () => {
  await gateway.stop();
  await database.drop();
});

const hex = () => randomBytes(16).toString('hex');

async function tenantWithWebhook(): Promise<{ tenant: Tenant; key: string; webhook: Webhook }> {
  const tenant = await createTenant(gateway.deps.db);
  const key = tenant.live.secret;
  const res = await gateway.api('/api/v1/webhooks', {
    key,
    method: 'POST',
    body: { url: PUBLIC_URL, eventTypes: ['link.created', 'link.updated'] },
  });
  if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
  return { tenant, key, webhook: (res.body as unknown as { webhook: Webhook }).webhook };
}

interface DeliverySeed {
  type?: WebhookEventType;
  status?: WebhookDeliveryStatus;
  createdAt?: string;
  nextAttemptAt?: string;
  enqueuedAt?: string | null;
  /** Attempts to record (1..n), each failing with a 500 but the last of a delivered one. */
  attempts?: number;
}

/** An event and its delivery to the endpoint, written as the outbox and the delivery would. */
async function insertDelivery(
  tenant: Tenant,
  endpointId: string,
  seed: DeliverySeed = {},
): Promise<string> {
  const db = gateway.deps.db;
  const eventId = `evt_${hex()}`;
  const deliveryId = `dlv_${hex()}`;
  const status = seed.status ?? 'pending';
  const attempts = seed.attempts ?? 0;
  const createdAt = seed.createdAt ?? new Date().toISOString();
  await sql`INSERT INTO webhook_events (id, app_id, environment, type, subject, snapshot, occurred_at)
            VALUES (${eventId}, ${tenant.appId}, 'live', ${seed.type ?? 'link.created'},
                    'lnk_subject', '{}'::jsonb, ${createdAt})`.execute(db);
  await sql`INSERT INTO webhook_deliveries
              (id, event_id, endpoint_id, subject, seq, status, attempts, next_attempt_at,
               enqueued_at, created_at, finished_at)
            SELECT ${deliveryId}, id, ${endpointId}, subject, seq, ${status}, ${attempts},
                   ${seed.nextAttemptAt ?? createdAt}, ${seed.enqueuedAt ?? null},
                   ${createdAt}, ${status === 'pending' ? null : createdAt}
              FROM webhook_events WHERE id = ${eventId}`.execute(db);
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const succeeded = status === 'delivered' && attempt === attempts;
    await db
      .insertInto('webhook_attempts')
      .values({
        delivery_id: deliveryId,
        attempt,
        started_at: new Date(Date.parse(createdAt) + attempt * 1000),
        duration_ms: 100 + attempt,
        outcome: succeeded ? 'delivered' : 'http_error',
        response_status: succeeded ? 204 : 500,
        response_excerpt: succeeded ? null : `oops ${attempt}`,
      })
      .execute();
  }
  return deliveryId;
}

function deliveriesOf(res: ApiResponse): DeliveryPage {
  if (res.status !== 200) throw new Error(`deliveries: ${res.status} ${res.text}`);
  return res.body as unknown as DeliveryPage;
}

function listDeliveries(webhookId: string, key: string, query = '') {
  return gateway.api(`/api/v1/webhooks/${webhookId}/deliveries${query}`, { key });
}

function retry(webhookId: string, deliveryId: string, key: string) {
  return gateway.api(`/api/v1/webhooks/${webhookId}/deliveries/${deliveryId}/retry`, {
    key,
    method: 'POST',
  });
}

function deliveryRow(id: string) {
  return gateway.deps.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

describe('GET /webhooks/{id}/deliveries', () => {
  it('lists deliveries newest first with their last 10 attempts, newest first', async () => {
    const { tenant, key, webhook } = await tenantWithWebhook();
    const old = await insertDelivery(tenant, webhook.id, {
      status: 'delivered',
      attempts: 2,
      createdAt: '2030-01-01T10:00:00.000Z',
    });
    const failing = await insertDelivery(tenant, webhook.id, {
      type: 'link.updated',
      attempts: 12,
      createdAt: '2030-01-01T11:00:00.000Z',
      nextAttemptAt: '2030-01-01T12:00:00.000Z',
    });
    const page = deliveriesOf(await listDeliveries(webhook.id, key));
    expect(page.nextCursor).toBeNull();
    expect(page.deliveries.map((delivery) => delivery.id)).toEqual([failing, old]);
    const [newest, oldest] = page.deliveries;
    expect(newest).toEqual({
      id: failing,
      eventId: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
      eventType: 'link.updated',
      status: 'pending',
      attempts: 12,
      createdAt: '2030-01-01T11:00:00.000Z',
      nextAttemptAt: '2030-01-01T12:00:00.000Z',
      finishedAt: null,
      attemptLog: expect.any(Array),
    });
    expect(newest.attemptLog.map((entry) => entry.attempt)).toEqual([
      12, 11, 10, 9, 8, 7, 6, 5, 4, 3,
    ]);
    expect(newest.attemptLog[0]).toEqual({
      attempt: 12,
      at: '2030-01-01T11:00:12.000Z',
      durationMs: 112,
      outcome: 'http_error',
      responseStatus: 500,
      responseExcerpt: 'oops 12',
    });
    expect(oldest).toMatchObject({
      status: 'delivered',
      nextAttemptAt: null,
      finishedAt: '2030-01-01T10:00:00.000Z',
      attemptLog: [
        {
          attempt: 2,
          at: '2030-01-01T10:00:02.000Z',
          durationMs: 102,
          outcome: 'delivered',
          responseStatus: 204,
          responseExcerpt: null,
        },
        expect.objectContaining({ attempt: 1, responseStatus: 500 }),
      ],
    });
  });

  it('pages by cursor, filters by status, and shows an endpoint without deliveries as empty', async () => {
    const { tenant, key, webhook } = await tenantWithWebhook();
    expect(deliveriesOf(await listDeliveries(webhook.id, key))).toEqual({
      deliveries: [],
      nextCursor: null,
    });
    const ids: string[] = [];
    // Two in the same instant: the id orders them.
    const times = ['01', '02', '03', '03', '04'].map((s) => `2030-02-01T00:00:${s}.000Z`);
    for (const [i, createdAt] of times.entries()) {
      ids.push(
        await insertDelivery(tenant, webhook.id, {
          createdAt,
          status: i % 2 === 0 ? 'failed' : 'pending',
        }),
      );
    }
    const newestFirst = [ids[4], ...[ids[2], ids[3]].sort().reverse(), ids[1], ids[0]];
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = `?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = deliveriesOf(await listDeliveries(webhook.id, key, query));
      expect(page.deliveries.length).toBeLessThanOrEqual(2);
      seen.push(...page.deliveries.map((delivery) => delivery.id));
      cursor = page.nextCursor;
    } while (cursor !== null);
    expect(seen).toEqual(newestFirst);

    const failed = deliveriesOf(await listDeliveries(webhook.id, key, '?status=failed'));
    expect(failed.deliveries.map((delivery) => delivery.id)).toEqual(
      newestFirst.filter((id) => [ids[0], ids[2], ids[4]].includes(id)),
    );
    expect(failed.deliveries.every((delivery) => delivery.status === 'failed')).toBe(true);
    const one = deliveriesOf(await listDeliveries(webhook.id, key, '?status=pending&limit=1'));
    expect(one.deliveries.map((delivery) => delivery.id)).toEqual([
      newestFirst.filter((id) => [ids[1], ids[3]].includes(id))[0],
    ]);
    expect(one.nextCursor).toBe(one.deliveries[0].id);
  });

  it('answers 422 naming each bad parameter', async () => {
    const { key, webhook } = await tenantWithWebhook();
    const res = await listDeliveries(webhook.id, key, '?limit=0&status=lost&cursor=abc&page=2');
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: 'invalid_request',
      message: 'Some parameters are invalid.',
      fields: {
        limit: 'must be an integer from 1 to 100',
        status: 'must be one of pending, delivered, failed',
        cursor: 'must be the nextCursor of a previous page',
        page: 'unknown parameter',
      },
    });
    for (const query of ['?limit=101', '?limit=1.5', '?limit=1&limit=2']) {
      expect((await listDeliveries(webhook.id, key, query)).status).toBe(422);
    }
    expect((await listDeliveries(webhook.id, key, '?limit=100')).status).toBe(200);
  });

  it("never shows another endpoint's deliveries", async () => {
    const { tenant, key, webhook } = await tenantWithWebhook();
    const other = await gateway.api('/api/v1/webhooks', {
      key,
      method: 'POST',
      body: { url: PUBLIC_URL, eventTypes: ['link.created'] },
    });
    const otherId = (other.body as unknown as { webhook: Webhook }).webhook.id;
    const mine = await insertDelivery(tenant, webhook.id);
    const theirs = await insertDelivery(tenant, otherId);
    const page = deliveriesOf(await listDeliveries(webhook.id, key));
    expect(page.deliveries.map((delivery) => delivery.id)).toEqual([mine]);
    // A cursor of another endpoint's delivery names nothing here.
    expect(deliveriesOf(await listDeliveries(webhook.id, key, `?cursor=${theirs}`))).toEqual({
      deliveries: [],
      nextCursor: null,
    });
  });
});

describe('POST /webhooks/{id}/deliveries/{deliveryId}/retry', () => {
  it('makes a finished delivery pending and due now, and answers 202 with it', async () => {
    const { tenant, key, webhook } = await tenantWithWebhook();
    const id = await insertDelivery(tenant, webhook.id, {
      status: 'failed',
      attempts: 3,
      createdAt: '2030-03-01T00:00:00.000Z',
      enqueuedAt: '2030-03-01T00:00:00.000Z',
    });
    const before = Date.now();
    const res = await retry(webhook.id, id, key);
    expect(res.status).toBe(202);
    const { delivery } = res.body as unknown as { delivery: WebhookDelivery };
    expect(delivery).toMatchObject({
      id,
      status: 'pending',
      attempts: 3,
      finishedAt: null,
      createdAt: '2030-03-01T00:00:00.000Z',
    });
    expect(delivery.attemptLog).toHaveLength(3);
    expect(Math.abs(Date.parse(delivery.nextAttemptAt!) - before)).toBeLessThan(60_000);
    expect(await deliveryRow(id)).toMatchObject({
      status: 'pending',
      finished_at: null,
      enqueued_at: null,
    });
    const listed = deliveriesOf(await listDeliveries(webhook.id, key)).deliveries;
    expect(listed).toEqual([delivery]);
  });

  it('answers 409 while the endpoint is disabled, and leaves the delivery alone', async () => {
    const { tenant, key, webhook } = await tenantWithWebhook();
    const id = await insertDelivery(tenant, webhook.id, { status: 'failed' });
    await gateway.api(`/api/v1/webhooks/${webhook.id}`, {
      key,
      method: 'PATCH',
      body: { enabled: false },
    });
    const res = await retry(webhook.id, id, key);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      error: 'conflict',
      message: 'The webhook is disabled; enable the webhook first.',
    });
    expect((await deliveryRow(id)).status).toBe('failed');
  });

  it("answers one identical 404 for an unknown delivery or another endpoint's", async () => {
    const { tenant, key, webhook } = await tenantWithWebhook();
    const { tenant: other, webhook: otherHook } = await tenantWithWebhook();
    const theirs = await insertDelivery(other, otherHook.id, { status: 'failed' });
    const sibling = await gateway.api('/api/v1/webhooks', {
      key,
      method: 'POST',
      body: { url: PUBLIC_URL, eventTypes: ['link.created'] },
    });
    const siblingId = (sibling.body as unknown as { webhook: Webhook }).webhook.id;
    const siblings = await insertDelivery(tenant, siblingId, { status: 'failed' });
    for (const deliveryId of [theirs, siblings, `dlv_${hex()}`, 'not-an-id']) {
      const res = await retry(webhook.id, deliveryId, key);
      expect({ deliveryId, status: res.status, text: res.text }).toEqual({
        deliveryId,
        status: 404,
        text: JSON.stringify(NO_DELIVERY),
      });
    }
    // Another app's endpoint is no webhook at all, whichever delivery is named.
    const res = await retry(otherHook.id, theirs, key);
    expect(res.body).toEqual(NO_WEBHOOK);
    expect((await deliveryRow(theirs)).status).toBe('failed');
    expect((await deliveryRow(siblings)).status).toBe('failed');
  });
});

describe('enabling resumes pending deliveries', () => {
  it('makes the pending deliveries of a disabled endpoint due now, and only those', async () => {
    const { tenant, key, webhook } = await tenantWithWebhook();
    const later = '2031-01-01T00:00:00.000Z';
    const pending = await insertDelivery(tenant, webhook.id, {
      nextAttemptAt: later,
      enqueuedAt: '2030-01-01T00:00:00.000Z',
      attempts: 2,
    });
    const failed = await insertDelivery(tenant, webhook.id, {
      status: 'failed',
      enqueuedAt: '2030-01-01T00:00:00.000Z',
    });
    const { webhook: other } = await tenantWithWebhook();
    const elsewhere = await insertDelivery(tenant, other.id, { nextAttemptAt: later });

    // Disabling leaves them waiting as they are.
    await gateway.api(`/api/v1/webhooks/${webhook.id}`, {
      key,
      method: 'PATCH',
      body: { enabled: false },
    });
    expect((await deliveryRow(pending)).next_attempt_at.toISOString()).toBe(later);

    const before = Date.now();
    const res = await gateway.api(`/api/v1/webhooks/${webhook.id}`, {
      key,
      method: 'PATCH',
      body: { enabled: true },
    });
    expect(res.status).toBe(200);
    const resumed = await deliveryRow(pending);
    expect(resumed.enqueued_at).toBeNull();
    expect(Math.abs(resumed.next_attempt_at.getTime() - before)).toBeLessThan(60_000);
    expect(resumed).toMatchObject({ status: 'pending', attempts: 2 });
    expect((await deliveryRow(failed)).enqueued_at?.toISOString()).toBe('2030-01-01T00:00:00.000Z');
    expect((await deliveryRow(elsewhere)).next_attempt_at.toISOString()).toBe(later);
  });

  it('leaves pending deliveries alone when the endpoint was enabled already', async () => {
    const { tenant, key, webhook } = await tenantWithWebhook();
    const later = '2031-01-01T00:00:00.000Z';
    const pending = await insertDelivery(tenant, webhook.id, {
      nextAttemptAt: later,
      enqueuedAt: '2030-01-01T00:00:00.000Z',
    });
    await gateway.api(`/api/v1/webhooks/${webhook.id}`, {
      key,
      method: 'PATCH',
      body: { enabled: true },
    });
    expect(await deliveryRow(pending)).toMatchObject({
      next_attempt_at: new Date(later),
      enqueued_at: new Date('2030-01-01T00:00:00.000Z'),
    });
  });

  it('deletes the deliveries with their endpoint', async () => {
    const { tenant, key, webhook } = await tenantWithWebhook();
    const id = await insertDelivery(tenant, webhook.id, { status: 'failed', attempts: 1 });
    const res = await gateway.api(`/api/v1/webhooks/${webhook.id}`, { key, method: 'DELETE' });
    expect(res.status).toBe(204);
    const left = await gateway.deps.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('id', '=', id)
      .execute();
    expect(left).toEqual([]);
  });
});
