import { SETTLE_LOCK_TIMEOUT_MS } from '@linkservice/creation';
import type { Tenant } from '@linkservice/testing';
import { aliasesOf, freePort, timed } from '@linkservice/testing';
import type { ApiResponse } from '@linkservice/testing';
import { startGateway } from '../testing';
import { useCreationStack } from './creation.testing';

const TIMEOUT_MS = 1_000;
/** The settle step may wait this long for a worker transaction still holding the request. */
const MARGIN_MS = SETTLE_LOCK_TIMEOUT_MS + 500;

const kit = useCreationStack({ env: { CREATION_TIMEOUT_MS: String(TIMEOUT_MS) } });
let tenant: Tenant;

beforeEach(async () => {
  tenant = await kit.newTenant();
});
afterEach(async () => {
  // Every test leaves a normally running worker behind.
  await kit.stack.worker.stop();
  await kit.stack.worker.start();
});

const create = (body: unknown) => kit.create(tenant.live.secret, body);
const createBatch = (links: unknown[]) => kit.createBatch(tenant.live.secret, links);

/** `linkservice_creation_timeouts_total{reason}` as the gateway's /metrics would show it. */
async function creationTimeouts(reason: string): Promise<number> {
  const metric = await kit.stack.gateway.deps.metrics.registry
    .getSingleMetric('linkservice_creation_timeouts_total')
    ?.get();
  return metric?.values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

function expectUnavailable(res: ApiResponse): void {
  expect(res.status).toBe(503);
  expect(res.body).toEqual({ error: 'unavailable', message: expect.any(String) });
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  // Nothing was created, so the reserved unit came back.
  expect(res.headers.get('ratelimit-remaining')).toBe('300');
}

describe('when the worker does not answer in time', () => {
  it('answers 503 with Retry-After, and the job never runs once the worker is back', async () => {
    await kit.stack.worker.stop();
    const timeoutsBefore = await creationTimeouts('timeout');
    const { res, elapsedMs } = await timed(() =>
      create({ alias: 'while-down', webFallbackUrl: 'https://example.com' }),
    );
    expectUnavailable(res);
    expect(await creationTimeouts('timeout')).toBe(timeoutsBefore + 1);
    expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT_MS);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + MARGIN_MS);

    await kit.stack.worker.start();
    // The queue is worked in order: once a later creation is answered, the abandoned job has had
    // its chance. The same alias being free proves it created nothing.
    const later = await create({ alias: 'while-down', webFallbackUrl: 'https://example.com' });
    expect(later.status).toBe(201);
    expect(later.headers.get('ratelimit-remaining')).toBe('299');
    expect(await aliasesOf(kit.db, tenant.appId)).toEqual(['while-down']);
  });

  it('answers a batch with 503 and creates none of it', async () => {
    await kit.stack.worker.stop();
    const { res, elapsedMs } = await timed(() =>
      createBatch([
        { alias: 'b-1', webFallbackUrl: 'https://example.com' },
        { alias: 'b-2', webFallbackUrl: 'https://example.com' },
        { webFallbackUrl: 'invalid' },
      ]),
    );
    expectUnavailable(res);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + MARGIN_MS);

    await kit.stack.worker.start();
    const later = await createBatch([
      { alias: 'b-1', webFallbackUrl: 'https://example.com' },
      { alias: 'b-2', webFallbackUrl: 'https://example.com' },
    ]);
    expect(later.status).toBe(201);
    expect(await aliasesOf(kit.db, tenant.appId)).toEqual(['b-1', 'b-2']);
  });

  it('answers 503 when the worker is too slow, and its late work is thrown away', async () => {
    await kit.stack.worker.stop();
    // Past the deadline and the worker's commit grace: its transaction must roll back.
    await kit.stack.worker.start({ testDelayMs: TIMEOUT_MS + 2_000 });
    const { res, elapsedMs } = await timed(() =>
      create({ alias: 'too-slow', webFallbackUrl: 'https://example.com' }),
    );
    expectUnavailable(res);
    expect(elapsedMs).toBeLessThan(TIMEOUT_MS + MARGIN_MS);

    // stop() waits for the slow job to finish: whatever it did is final now.
    await kit.stack.worker.stop();
    expect(await aliasesOf(kit.db, tenant.appId)).toEqual([]);
    await kit.stack.worker.start();
    expect(
      (await create({ alias: 'too-slow', webFallbackUrl: 'https://example.com' })).status,
    ).toBe(201);
  });
});

describe('when Redis is unreachable', () => {
  it('answers 503 unavailable with Retry-After and creates nothing', async () => {
    const gateway = await startGateway({
      env: { REDIS_URL: `redis://127.0.0.1:${await freePort()}` },
    });
    try {
      const single = await gateway.api('/api/v1/links', {
        key: tenant.live.secret,
        method: 'POST',
        body: { alias: 'no-redis', webFallbackUrl: 'https://example.com' },
      });
      expect(single.status).toBe(503);
      expect(single.body?.error).toBe('unavailable');
      expect(Number(single.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

      const batch = await gateway.api('/api/v1/links/batch', {
        key: tenant.live.secret,
        method: 'POST',
        body: { links: [{ webFallbackUrl: 'https://example.com' }] },
      });
      expect(batch.status).toBe(503);
      expect(await aliasesOf(kit.db, tenant.appId)).toEqual([]);
    } finally {
      await gateway.stop();
    }
  });
});
