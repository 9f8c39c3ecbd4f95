import { ownDatabase } from '@linkservice/testing';
import type { DbHandle } from '@linkservice/db';
import { scheduleRetentions } from '@linkservice/lifecycle';
import { createLogger } from '@linkservice/logger';
import type { Tenant } from '@linkservice/testing';
import { createTenant, eventually, insertLink } from '@linkservice/testing';
import { sql } from 'kysely';
import type { WorkerConfig } from '../config';
import {
  deliveryTestConfig,
  emitInstallEvent,
  emitLinkEvent,
  insertEndpoint,
} from '../testing/webhook-harness';
import { webhookRetentionTasks } from './webhook-retention';
import { WebhookRetentionRepository } from './webhook-retention.repository';

/**
 * The webhook tables' retention (WEBHOOK_RETENTION_DAYS 30 here), on a database of this file's
 * own: no relay runs, so deliveries stay as the test sets them.
 */
const DAY_MS = 24 * 3_600_000;
let postgres: DbHandle & { url: string; drop(): Promise<void> };
let config: WorkerConfig;
let retention: WebhookRetentionRepository;

beforeAll(async () => {
  postgres = await ownDatabase(4);
  config = deliveryTestConfig(postgres.url, { WEBHOOK_RETENTION_DAYS: '30' });
  retention = new WebhookRetentionRepository(postgres.db);
});
afterAll(async () => {
  await postgres.drop();
});

/** A link event for `tenant`'s endpoint, `ageDays` old, its delivery as `state` says. */
async function linkEvent(
  tenant: Tenant,
  endpointId: string,
  ageDays: number,
  state: { status: 'pending' } | { status: 'delivered' | 'failed'; finishedDaysAgo: number },
): Promise<string> {
  const link = await insertLink(postgres.db, { appId: tenant.appId, environment: 'test' });
  const eventId = (await emitLinkEvent(postgres.db, link.id))!;
  await age(eventId, endpointId, ageDays, state);
  return eventId;
}

async function age(
  eventId: string,
  endpointId: string,
  ageDays: number,
  state: { status: 'pending' } | { status: 'delivered' | 'failed'; finishedDaysAgo: number },
): Promise<void> {
  const occurredAt = new Date(Date.now() - ageDays * DAY_MS);
  await postgres.db
    .updateTable('webhook_events')
    .set({ occurred_at: occurredAt })
    .where('id', '=', eventId)
    .execute();
  if (state.status === 'pending') return;
  const finishedAt = new Date(Date.now() - state.finishedDaysAgo * DAY_MS);
  const delivery = await postgres.db
    .updateTable('webhook_deliveries')
    .set({ status: state.status, attempts: 1, finished_at: finishedAt })
    .where('event_id', '=', eventId)
    .where('endpoint_id', '=', endpointId)
    .returning('id')
    .executeTakeFirstOrThrow();
  await postgres.db
    .insertInto('webhook_attempts')
    .values({
      delivery_id: delivery.id,
      attempt: 1,
      started_at: finishedAt,
      duration_ms: 12,
      outcome: state.status === 'delivered' ? 'succeeded' : 'http_error',
      response_status: state.status === 'delivered' ? 200 : 500,
    })
    .execute();
}

async function eventsLeft(ids: readonly string[]): Promise<string[]> {
  const rows = await postgres.db
    .selectFrom('webhook_events')
    .select('id')
    .where('id', 'in', ids)
    .execute();
  return rows.map((row) => row.id).sort();
}

async function deliveriesLeft(eventIds: readonly string[]): Promise<string[]> {
  const rows = await postgres.db
    .selectFrom('webhook_deliveries')
    .select('event_id')
    .where('event_id', 'in', eventIds)
    .execute();
  return rows.map((row) => row.event_id).sort();
}

test('deletes finished deliveries and abandoned ones past the retention, then their bare events', async () => {
  const tenant = await createTenant(postgres.db);
  const endpoint = await insertEndpoint(postgres.db, config, {
    appId: tenant.appId,
    url: 'https://example.com/hooks',
  });
  const id = endpoint.id;
  const oldDelivered = await linkEvent(tenant, id, 40, {
    status: 'delivered',
    finishedDaysAgo: 35,
  });
  const oldFailed = await linkEvent(tenant, id, 40, { status: 'failed', finishedDaysAgo: 31 });
  const recentDelivered = await linkEvent(tenant, id, 5, {
    status: 'delivered',
    finishedDaysAgo: 5,
  });
  // An old event delivered lately (its endpoint was disabled most of the time): kept.
  const oldLateDelivered = await linkEvent(tenant, id, 40, {
    status: 'delivered',
    finishedDaysAgo: 2,
  });
  const abandoned = await linkEvent(tenant, id, 31, { status: 'pending' });
  const waiting = await linkEvent(tenant, id, 29, { status: 'pending' });
  const all = [oldDelivered, oldFailed, recentDelivered, oldLateDelivered, abandoned, waiting];

  // As the worker runs it: in slices of 1 000 until every delete comes back short.
  const schedule = scheduleRetentions(
    webhookRetentionTasks(retention, config).filter((task) => task.label.includes('deliveries')),
    createLogger('retention-test', 'silent'),
  );
  try {
    const kept = [recentDelivered, oldLateDelivered, waiting].sort();
    await eventually(async () => JSON.stringify(await eventsLeft(all)) === JSON.stringify(kept), {
      what: 'the old events gone',
    });
    expect(await deliveriesLeft(all)).toEqual(kept);
  } finally {
    await schedule.stop();
  }
  // Their attempts went with them.
  const { count } = await postgres.db
    .selectFrom('webhook_attempts')
    .innerJoin('webhook_deliveries', 'webhook_deliveries.id', 'webhook_attempts.delivery_id')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('webhook_deliveries.endpoint_id', '=', id)
    .executeTakeFirstOrThrow();
  expect(Number(count)).toBe(2);
  const orphanAttempts = await sql<{ n: number }>`
    SELECT count(*)::int AS n FROM webhook_attempts attempt
     WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.id = attempt.delivery_id)`.execute(
    postgres.db,
  );
  expect(orphanAttempts.rows[0].n).toBe(0);
});

test('deletes old events whose deliveries are gone (an endpoint deleted), and no newer ones', async () => {
  const tenant = await createTenant(postgres.db);
  const endpoint = await insertEndpoint(postgres.db, config, {
    appId: tenant.appId,
    url: 'https://example.com/hooks',
  });
  const old = await linkEvent(tenant, endpoint.id, 31, { status: 'pending' });
  const recent = await linkEvent(tenant, endpoint.id, 1, { status: 'pending' });
  await postgres.db.deleteFrom('webhook_endpoints').where('id', '=', endpoint.id).execute();
  expect(await deliveriesLeft([old, recent])).toEqual([]);
  await retention.deleteOrphanEvents(30, 1_000);
  expect(await eventsLeft([old, recent])).toEqual([recent]);
});

test('deletes install events once none of their deliveries is pending, whatever their age', async () => {
  const tenant = await createTenant(postgres.db);
  const [first] = await Promise.all(
    [1, 2].map(() =>
      insertEndpoint(postgres.db, config, {
        appId: tenant.appId,
        url: 'https://example.com/hooks',
        eventTypes: ['install.matched'],
      }),
    ),
  );
  const sent = (await emitInstallEvent(postgres.db, tenant.appId))!;
  const halfSent = (await emitInstallEvent(postgres.db, tenant.appId))!;
  const unsent = (await emitInstallEvent(postgres.db, tenant.appId))!;
  // A link event delivered a minute ago stays for the retention.
  const link = await insertLink(postgres.db, { appId: tenant.appId, environment: 'test' });
  await insertEndpoint(postgres.db, config, { appId: tenant.appId, url: 'https://example.com/l' });
  const linkEventId = (await emitLinkEvent(postgres.db, link.id))!;
  await postgres.db
    .updateTable('webhook_deliveries')
    .set({ status: 'delivered', attempts: 1, finished_at: new Date() })
    .where('event_id', 'in', [sent, linkEventId])
    .execute();
  await age(halfSent, first.id, 0, { status: 'failed', finishedDaysAgo: 0 });

  await retention.deleteSentInstallEvents(1_000);
  expect(await eventsLeft([sent, halfSent, unsent, linkEventId])).toEqual(
    [halfSent, unsent, linkEventId].sort(),
  );
  expect(await deliveriesLeft([sent])).toEqual([]);
});
