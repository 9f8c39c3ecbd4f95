import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database, Environment } from '@linkservice/db';
import { newId } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';
import { createLogger } from '@linkservice/logger';
import { testEnvironment } from '@linkservice/testing';
import type { WebhookEventType } from '@linkservice/webhooks';
import { generateSigningSecret, outboxCtes, secretBoxOf } from '@linkservice/webhooks';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { WorkerConfig } from '../config';
import { loadConfig } from '../config';
import type { WorkerResources } from '../deps';
import { buildDeps } from '../deps';
import type { WebhookDelivery, WebhookDeliveryOptions } from '../webhooks/webhook-delivery';
import { startWebhookDelivery } from '../webhooks/webhook-delivery';

/** One request a TestReceiver got. */
export interface ReceivedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** How a TestReceiver answers its `index`-th request (from 0). */
export type ReceiverBehaviour = (
  request: ReceivedRequest,
  response: ServerResponse,
  index: number,
) => void;

export const answerWith =
  (status: number, body = ''): ReceiverBehaviour =>
  (_request, response) => {
    response.writeHead(status, { 'content-type': 'text/plain' }).end(body);
  };

/**
 * A webhook receiver on 127.0.0.1: records every request (headers and body as sent) and
 * answers as `behaviour` says (200 by default). close() drops held connections too.
 */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  private readonly server = createServer((incoming, response) => this.handle(incoming, response));

  private constructor(public behaviour: ReceiverBehaviour) {}

  static async start(behaviour: ReceiverBehaviour = answerWith(200)): Promise<TestReceiver> {
    const receiver = new TestReceiver(behaviour);
    receiver.server.listen(0, '127.0.0.1');
    await once(receiver.server, 'listening');
    return receiver;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** Its URL, on `host` (127.0.0.1 unless a test resolves another name to it). */
  url(path = '/hooks', host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }

  /** The `webhook-id` of each request, in arrival order. */
  get ids(): string[] {
    return this.requests.map((request) => String(request.headers['webhook-id']));
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private handle(incoming: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const request: ReceivedRequest = {
        method: incoming.method ?? '',
        url: incoming.url ?? '',
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const index = this.requests.push(request) - 1;
      this.behaviour(request, response, index);
    });
  }
}

/** A worker's settings for delivery tests: receivers on this host allowed, short retries. */
export function deliveryTestConfig(
  databaseUrl: string,
  env: Record<string, string | undefined> = {},
): WorkerConfig {
  return loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    DATABASE_URL: databaseUrl,
    REDIS_URL: testEnvironment().redisUrl,
    REDIS_PREFIX: `${testEnvironment().redisPrefix}:wh-${randomBytes(3).toString('hex')}`,
    LINK_DOMAIN: 'links.test',
    WEBHOOK_ENCRYPTION_KEY: process.env.WEBHOOK_ENCRYPTION_KEY,
    WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8',
    WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.2,0.2',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_RELAY_INTERVAL_MS: '50',
    ...env,
  });
}

/** Webhook delivery as a worker process runs it, on the test's pool; close() ends it all. */
export interface TestDeliveryWorker {
  delivery: WebhookDelivery;
  resources: WorkerResources;
  config: WorkerConfig;
  close(): Promise<void>;
}

export async function startTestDelivery(
  db: Kysely<Database>,
  config: WorkerConfig,
  options: WebhookDeliveryOptions = {},
  logger: Logger = createLogger('webhooks-test', 'silent'),
): Promise<TestDeliveryWorker> {
  const resources = buildDeps(config, logger, { clients: (opened) => ({ ...opened, db }) });
  const delivery = startWebhookDelivery(resources.deps, options);
  // Closing a Worker whose blocking connection is still connecting leaves an unheard 'error'.
  await delivery.worker.waitUntilReady();
  let closing: Promise<void> | undefined;
  return {
    delivery,
    resources,
    config,
    close: () =>
      (closing ??= (async () => {
        await delivery.stop();
        await resources.close();
      })()),
  };
}

export interface TestEndpoint {
  id: string;
  /** Its signing secret, as the API showed it once. */
  secret: string;
}

/** An enabled endpoint of `appId`'s, its secret sealed as the gateway stores it. */
export async function insertEndpoint(
  db: Kysely<Database>,
  config: WorkerConfig,
  options: {
    appId: string;
    url: string;
    environment?: Environment;
    eventTypes?: WebhookEventType[];
    secret?: string;
    previousSecret?: { secret: string; expiresAt: Date };
    failingSince?: Date;
  },
): Promise<TestEndpoint> {
  const box = secretBoxOf(config);
  const id = newId('whk');
  const secret = options.secret ?? generateSigningSecret();
  await db
    .insertInto('webhook_endpoints')
    .values({
      id,
      app_id: options.appId,
      environment: options.environment ?? 'test',
      url: options.url,
      event_types: options.eventTypes ?? ['link.created', 'link.updated', 'install.matched'],
      secret: box.seal(secret),
      previous_secret: options.previousSecret ? box.seal(options.previousSecret.secret) : null,
      previous_secret_expires_at: options.previousSecret?.expiresAt ?? null,
      failing_since: options.failingSince ?? null,
    })
    .execute();
  return { id, secret };
}

/**
 * The events of a change of link `linkId`, written with the outbox CTEs as the producers write
 * them (one per subscribed enabled endpoint's delivery). Returns the event's id, or undefined
 * when no endpoint subscribes.
 */
export async function emitLinkEvent(
  db: Kysely<Database>,
  linkId: string,
  type: WebhookEventType = 'link.created',
  traceparent = '',
): Promise<string | undefined> {
  const ctes = outboxCtes({
    from: 'changed',
    type,
    appId: 'changed.app_id',
    environment: 'changed.environment',
    subject: 'changed.id',
    snapshot: 'changed.snapshot',
    traceparent: 'changed.traceparent',
  });
  const { rows } = await sql<{ id: string }>`
    WITH changed AS (
      SELECT link.app_id, link.environment, link.id, to_jsonb(link) AS snapshot,
             ${traceparent}::text AS traceparent
        FROM links link WHERE link.id = ${linkId}
    ),
    ${sql.raw(ctes)}
    SELECT id FROM webhook_events_new`.execute(db);
  return rows.at(0)?.id;
}

/** An install.matched event of `appId`'s (its snapshot in the API's shape), as its producer writes it. */
export async function emitInstallEvent(
  db: Kysely<Database>,
  appId: string,
  environment: Environment = 'test',
): Promise<string | undefined> {
  const installId = newId('ins');
  const ctes = outboxCtes({
    from: 'changed',
    type: 'install.matched',
    appId: 'changed.app_id',
    environment: 'changed.environment',
    subject: 'changed.id',
    snapshot: 'changed.snapshot',
    traceparent: "''",
  });
  const { rows } = await sql<{ id: string }>`
    WITH changed AS (
      SELECT ${appId}::text AS app_id, ${environment}::text AS environment, ${installId}::text AS id,
             jsonb_build_object('id', ${installId}::text, 'platform', 'android') AS snapshot
    ),
    ${sql.raw(ctes)}
    SELECT id FROM webhook_events_new`.execute(db);
  return rows.at(0)?.id;
}

/** A delivery's row and its attempts, for assertions. */
export async function deliveryOf(db: Kysely<Database>, eventId: string, endpointId: string) {
  const delivery = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'status', 'attempts', 'next_attempt_at', 'enqueued_at', 'finished_at'])
    .where('event_id', '=', eventId)
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirstOrThrow();
  const attempts = await db
    .selectFrom('webhook_attempts')
    .select(['attempt', 'outcome', 'response_status', 'response_excerpt', 'duration_ms'])
    .where('delivery_id', '=', delivery.id)
    .orderBy('attempt')
    .execute();
  return { ...delivery, attemptRows: attempts };
}
