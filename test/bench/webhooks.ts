import { once } from 'node:events';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { generateSigningSecret, parseEncryptionKey, SecretBox } from '@linkservice/webhooks';
import type { Kysely } from 'kysely';
import type { Tenant } from '../support/tenants';

/**
 * For the webhook lines (create-with-webhook against create-without-webhook, scenarios.ts): the
 * receiver is a bare node:http server in the bench process that answers 204 at once, so the
 * line measures what the outbox and the deliveries cost the stack, not a customer's server.
 */
export interface WebhookReceiver {
  url: string;
  /** Deliveries received so far (each attempt counts). */
  received(): number;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let received = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received: () => received,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

/**
 * Subscribes the tenant's live environment to link.created at `url`, as POST /webhooks stores
 * an endpoint: its secret sealed under the stack's WEBHOOK_ENCRYPTION_KEY.
 */
export async function subscribeToCreations(
  db: Kysely<Database>,
  tenant: Tenant,
  url: string,
  encryptionKey: string,
): Promise<void> {
  const key = parseEncryptionKey(encryptionKey);
  if (!key) throw new Error('WEBHOOK_ENCRYPTION_KEY is not 32 bytes of base64');
  await db
    .insertInto('webhook_endpoints')
    .values({
      id: newId('whk'),
      app_id: tenant.appId,
      environment: 'live',
      url,
      event_types: ['link.created'],
      secret: new SecretBox(key).seal(generateSigningSecret()),
    })
    .execute();
}
