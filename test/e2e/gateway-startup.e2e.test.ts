import { generateReceiptSigningKey } from '@linkservice/keys';
import { freePort, testEnvironment } from '@linkservice/testing';
import type { HttpResponse } from '@linkservice/testing';
import { setTimeout as delay } from 'node:timers/promises';
import { sendApiRequest, ServiceProcess, useRunStack } from '../support/stack';
import { createTenant } from '../support/tenants';

/**
 * A gateway takes no traffic it cannot serve: a creation sent the moment its port accepts
 * connections (before anyone asked /readyz) is created, not answered 503 because its Redis or
 * BullMQ connections were still connecting. The port opens only once they are ready.
 */

const STARTS = 3;

jest.setTimeout(60_000);

const suite = useRunStack({
  services: ['worker'],
});

/** Sends the creation again and again until the port answers at all; returns that first answer. */
async function firstAnswer(url: string, key: string, alias: string): Promise<HttpResponse> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await sendApiRequest(`${url}/api/v1/links`, {
        key,
        body: { alias, webFallbackUrl: 'https://startup.example' },
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ECONNREFUSED' || Date.now() > deadline)
        throw error;
      await delay(2);
    }
  }
}

it(`answers a creation sent as soon as the port opens with 201 (${STARTS} starts)`, async () => {
  const env = testEnvironment();
  const tenant = await createTenant(suite.postgres.db);
  for (let start = 0; start < STARTS; start++) {
    const gateway = new ServiceProcess({
      name: 'gateway',
      port: await freePort(),
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'test',
        LOG_LEVEL: 'silent',
        OTEL_SDK_DISABLED: 'true',
        DATABASE_URL: env.databaseUrl,
        REDIS_URL: env.redisUrl,
        REDIS_PREFIX: suite.stack.redisPrefix,
        LINK_DOMAIN: suite.stack.linkDomain,
        RECEIPT_SIGNING_KEY: process.env.RECEIPT_SIGNING_KEY ?? generateReceiptSigningKey(),
        WEBHOOK_ENCRYPTION_KEY: process.env.WEBHOOK_ENCRYPTION_KEY ?? '',
      },
    });
    // start() resolves once /readyz passes; the creation races it from the first connection.
    const started = gateway.start();
    try {
      const res = await firstAnswer(gateway.url, tenant.live.secret, `startup-${start}`);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 201,
        body: { link: expect.objectContaining({ alias: `startup-${start}` }) as unknown },
      });
      await started;
    } finally {
      await started.catch(() => undefined);
      await gateway.stop();
    }
  }
});
