import { setTimeout as delay } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import { deleteKeysWithPrefix, eventually } from '@linkservice/testing';
import { Redis } from 'ioredis';
import type { ScratchDatabase } from '../support/database';
import { createMigratedDatabase, LOCAL_POSTGRES } from '../support/database';
import type { Stack } from '../support/stack';
import { sendApiRequest, startStack } from '../support/stack';
import type { Tenant } from '../support/tenants';
import { createTenant } from '../support/tenants';
import { WebhookReceiver } from '../support/webhook-receiver';

/**
 * Webhook deliveries through faults: the compiled worker SIGKILLed while it holds attempts open,
 * several times, and the receiver gone (connection refused) for a while, with creations arriving
 * all along. Every committed event must reach the receiver (0 lost); duplicates are allowed by
 * at-least-once delivery, each with the id of its event. The figures are printed.
 */
const KILLS = 3;
/** The fault tier has no run database: this suite makes its own, on the local servers. */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const REDIS_PREFIX = `lsfaults-wh-${randomBytes(3).toString('hex')}`;

let database: ScratchDatabase;
let postgres: DbHandle;
let stack: Stack;
beforeAll(async () => {
  database = await createMigratedDatabase({
    serverUrl: process.env.DATABASE_URL ?? LOCAL_POSTGRES,
    namePrefix: 'linkservice_faults_webhooks',
  });
  postgres = createDb({ connectionString: database.url, max: 2 });
  stack = await startStack({
    databaseUrl: database.url,
    redisUrl: REDIS_URL,
    redisPrefix: REDIS_PREFIX,
    exactRedisPrefix: true,
    services: ['gateway', 'worker'],
    env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' },
    serviceEnv: {
      worker: { WEBHOOK_RETRY_SCHEDULE: '0,0.5,1,1,1,1,1,1', WEBHOOK_RELAY_INTERVAL_MS: '100' },
    },
  });
});
afterAll(async () => {
  await stack.stop();
  await postgres.close();
  await database.drop();
  const redis = new Redis(REDIS_URL);
  await deleteKeysWithPrefix(redis, REDIS_PREFIX);
  redis.disconnect();
});
const suite = {
  get stack() {
    return stack;
  },
  get postgres() {
    return postgres;
  },
};

jest.setTimeout(600_000);

let receiver: WebhookReceiver;
afterAll(async () => {
  await receiver?.close();
});

async function createBatch(tenant: Tenant, size: number, tag: string): Promise<void> {
  const res = await sendApiRequest(`${suite.stack.apiUrl}/links/batch`, {
    key: tenant.test.secret,
    method: 'POST',
    body: {
      links: Array.from({ length: size }, (_, i) => ({
        webFallbackUrl: `https://e.example/${tag}/${i}`,
      })),
    },
  });
  expect(res.status).toBe(201);
}

async function committedEvents(tenant: Tenant): Promise<string[]> {
  const rows = await suite.postgres.db
    .selectFrom('webhook_events')
    .select('id')
    .where('app_id', '=', tenant.appId)
    .execute();
  return rows.map(({ id }) => id);
}

it('loses no event through worker kills and a receiver outage', async () => {
  const tenant = await createTenant(suite.postgres.db);
  receiver = await WebhookReceiver.start();
  // Slow answers: each kill lands while attempts are open.
  receiver.answer = () => ({ status: 204, delayMs: 300 });
  const registered = await sendApiRequest(`${suite.stack.apiUrl}/webhooks`, {
    key: tenant.test.secret,
    method: 'POST',
    body: { url: receiver.url, eventTypes: ['link.created'] },
  });
  expect(registered.status).toBe(201);
  const secret = (registered.body as unknown as { secret: string }).secret;

  for (let kill = 1; kill <= KILLS; kill++) {
    await createBatch(tenant, 40, `kill-${kill}`);
    const seen = receiver.received.length;
    await eventually(() => receiver.received.length > seen);
    suite.stack.worker.kill('SIGKILL');
    await suite.stack.worker.restart();
  }

  // The receiver goes away (connections refused) while events keep coming, then returns.
  const { port } = receiver;
  const before = receiver.received;
  await receiver.close();
  await createBatch(tenant, 40, 'outage');
  await delay(3_000);
  receiver = await WebhookReceiver.start('/hook', port);
  receiver.received.push(...before);

  const committed = await committedEvents(tenant);
  expect(committed).toHaveLength(KILLS * 40 + 40);
  const delivered = (ids: readonly string[]) => committed.every((id) => ids.includes(id));
  await eventually(() => delivered(receiver.eventIds()), {
    timeoutMs: 240_000,
    intervalMs: 500,
    what: 'every committed event received',
  });
  expect(new Set(receiver.eventIds())).toEqual(new Set(committed));
  for (const delivery of receiver.received) {
    expect(WebhookReceiver.verifies(delivery, secret)).toBe(true);
  }
  const duplicates = receiver.received.length - receiver.eventIds().length;
  process.stderr.write(
    `webhooks through ${KILLS} worker kills and a receiver outage: ${committed.length} events ` +
      `committed, ${receiver.eventIds().length} delivered (0 lost), ${duplicates} duplicates ` +
      `(each with its event's id), ${receiver.received.length} requests received\n`,
  );
  // Every event is delivered once its deliveries are recorded: none left pending or failed.
  await eventually(
    async () => {
      const open = await suite.postgres.db
        .selectFrom('webhook_deliveries')
        .innerJoin('webhook_events', 'webhook_events.id', 'webhook_deliveries.event_id')
        .select('webhook_deliveries.status')
        .where('webhook_events.app_id', '=', tenant.appId)
        .where('webhook_deliveries.status', '!=', 'delivered')
        .execute();
      return open.length === 0;
    },
    { timeoutMs: 60_000, what: 'every delivery recorded as delivered' },
  );
});
