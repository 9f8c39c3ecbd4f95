import type { Tenant } from '@linkservice/testing';
import { batchBody, creationRequestCount, linksOf } from '@linkservice/testing';
import type { ApiResponse } from '@linkservice/testing';
import { useCreationStack } from './creation.testing';

const LIMIT = 5;
const kit = useCreationStack({
  env: { CREATION_LIMIT_PER_HOUR: String(LIMIT) },
  workerConcurrency: 8,
});
const { newTenant, create, createBatch } = kit;
const entries = (n: number, extra: Record<string, unknown> = {}) =>
  Array.from({ length: n }, () => ({ webFallbackUrl: 'https://example.com', ...extra }));

function limitHeaders(res: ApiResponse) {
  return {
    limit: res.headers.get('ratelimit-limit'),
    remaining: res.headers.get('ratelimit-remaining'),
    reset: Number(res.headers.get('ratelimit-reset')),
  };
}

function expectResetWithinWindow(seconds: number): void {
  expect(Number.isInteger(seconds)).toBe(true);
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(seconds).toBeLessThanOrEqual(3600);
}

describe('the hourly creation limit', () => {
  let tenant: Tenant;
  beforeEach(async () => {
    tenant = await newTenant();
  });

  it('counts down, then answers 429 with Retry-After without sending a job', async () => {
    for (let used = 1; used <= LIMIT; used++) {
      const res = await create(tenant.live.secret, { webFallbackUrl: 'https://example.com' });
      expect(res.status).toBe(201);
      expect(limitHeaders(res)).toMatchObject({ limit: '5', remaining: String(LIMIT - used) });
    }
    const requestsBefore = await creationRequestCount(kit.db, tenant.appId);

    const refused = await create(tenant.live.secret, { webFallbackUrl: 'https://example.com' });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'rate_limited', message: expect.any(String) });
    const headers = limitHeaders(refused);
    expect(headers).toMatchObject({ limit: '5', remaining: '0' });
    expectResetWithinWindow(headers.reset);
    expect(refused.headers.get('retry-after')).toBe(String(headers.reset));

    expect(await creationRequestCount(kit.db, tenant.appId)).toBe(requestsBefore);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(LIMIT);
  });

  it('is shared by the live and test environments of one app, and separate per app', async () => {
    for (const key of [tenant.live, tenant.test, tenant.live, tenant.test, tenant.test]) {
      expect((await create(key.secret, { webFallbackUrl: 'https://example.com' })).status).toBe(
        201,
      );
    }
    expect((await create(tenant.live.secret, { webFallbackUrl: 'https://x.example' })).status).toBe(
      429,
    );
    expect((await create(tenant.test.secret, { webFallbackUrl: 'https://x.example' })).status).toBe(
      429,
    );
    const other = await newTenant();
    expect((await create(other.live.secret, { webFallbackUrl: 'https://x.example' })).status).toBe(
      201,
    );
  });

  it('gives the unit back when the entry is refused (alias taken, plan reached)', async () => {
    const body = { alias: 'only-once', webFallbackUrl: 'https://example.com' };
    expect(limitHeaders(await create(tenant.live.secret, body)).remaining).toBe('4');
    const duplicate = await create(tenant.live.secret, body);
    expect(duplicate.status).toBe(422);
    expect(limitHeaders(duplicate).remaining).toBe('4');

    const capped = await newTenant({ linkAllowance: 1 });
    await create(capped.live.secret, { webFallbackUrl: 'https://example.com' });
    const overPlan = await create(capped.live.secret, { webFallbackUrl: 'https://example.com' });
    expect(overPlan.status).toBe(422);
    expect(limitHeaders(overPlan).remaining).toBe('4');
  });

  it('lets exactly the limit through when single creates race (live and test mixed)', async () => {
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        create(i % 3 ? tenant.live.secret : tenant.test.secret, {
          webFallbackUrl: 'https://race.example',
        }),
      ),
    );
    const created = responses.filter((r) => r.status === 201);
    const refused = responses.filter((r) => r.status === 429);
    expect([created.length, refused.length]).toEqual([LIMIT, 20 - LIMIT]);
    for (const res of refused) {
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(res.headers.get('ratelimit-remaining')).toBe('0');
    }
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(LIMIT);
  });

  it('lets exactly the limit through when batches race', async () => {
    const responses = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        createBatch(i % 2 ? tenant.test.secret : tenant.live.secret, entries(3)),
      ),
    );
    const created = responses.reduce((sum, r) => sum + batchBody(r).created, 0);
    expect(created).toBe(LIMIT);
    for (const res of responses) {
      const { created: c, failed, notAttempted, results } = batchBody(res);
      expect(c + failed + notAttempted).toBe(3);
      if (c === 3) {
        expect(res.status).toBe(201);
        expect(res.body).not.toHaveProperty('stoppedEarly');
        continue;
      }
      expect(res.status).toBe(207);
      expect(batchBody(res).stoppedEarly).toEqual({
        reason: 'rate_limited',
        atIndex: c,
        message: expect.any(String),
      });
      expect(results[c]).toMatchObject({ index: c, ok: false, error: 'rate_limited' });
      expect(notAttempted).toBe(3 - c - 1);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(LIMIT);
  });

  it('creates exactly the plan allowance when batches race for it', async () => {
    // 4 units wanted, 5 in the window: only the plan allowance (3) can stop these batches.
    const capped = await newTenant({ linkAllowance: 3 });
    const responses = await Promise.all([
      createBatch(capped.live.secret, entries(2)),
      createBatch(capped.test.secret, entries(2)),
    ]);
    expect(responses.map((r) => batchBody(r).created).sort()).toEqual([1, 2]);
    const stopped = responses.find((r) => batchBody(r).created === 1)!;
    expect(stopped.status).toBe(207);
    expect(stopped.body).toMatchObject({ created: 1, failed: 1, notAttempted: 0 });
    expect(batchBody(stopped).stoppedEarly).toEqual({
      reason: 'plan_limit_reached',
      atIndex: 1,
      message: expect.any(String),
    });
    expect(batchBody(stopped).results[1]).toEqual({
      index: 1,
      ok: false,
      error: 'plan_limit_reached',
      message: expect.any(String),
    });
    expect(stopped.headers.get('retry-after')).toBeNull();
    expect(responses.find((r) => batchBody(r).created === 2)!.status).toBe(201);
    // The refused entry gave its unit back: 3 used of 5 once both answered.
    expect((await kit.stack.gateway.deps.creationLimiter.state(capped.appId)).remaining).toBe(2);
    expect(await linksOf(kit.db, capped.appId)).toHaveLength(3);
  });

  it('stops a batch part way at the limit and reports where', async () => {
    await create(tenant.live.secret, { webFallbackUrl: 'https://example.com' });
    await create(tenant.test.secret, { webFallbackUrl: 'https://example.com' });
    // 3 units left: entries 0-2 fit, entry 3 is refused, entry 4 (invalid anyway) never tried.
    const res = await createBatch(tenant.live.secret, [
      ...entries(4),
      { webFallbackUrl: 'not a url' },
    ]);
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ created: 3, failed: 1, notAttempted: 1 });
    expect(batchBody(res).results.map((r) => [r.index, r.ok])).toEqual([
      [0, true],
      [1, true],
      [2, true],
      [3, false],
    ]);
    expect(batchBody(res).results[3]).toEqual({
      index: 3,
      ok: false,
      error: 'rate_limited',
      message: expect.any(String),
    });
    expect(batchBody(res).stoppedEarly).toEqual({
      reason: 'rate_limited',
      atIndex: 3,
      message: expect.any(String),
    });
    const headers = limitHeaders(res);
    expect(headers.remaining).toBe('0');
    expect(res.headers.get('retry-after')).toBe(String(headers.reset));
  });

  it('still lets the worker decide in order when no unit is left', async () => {
    await create(tenant.live.secret, { alias: 'mine', webFallbackUrl: 'https://example.com' });
    for (let i = 1; i < LIMIT; i++) {
      await create(tenant.test.secret, { webFallbackUrl: 'https://example.com' });
    }
    const res = await createBatch(tenant.live.secret, [
      { alias: 'mine', webFallbackUrl: 'https://example.com' },
      { alias: 'b@d', webFallbackUrl: 'https://example.com' },
      { webFallbackUrl: 'https://example.com' },
      { webFallbackUrl: 'https://example.com' },
    ]);
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ created: 0, failed: 3, notAttempted: 1 });
    expect(batchBody(res).results).toEqual([
      {
        index: 0,
        ok: false,
        error: 'validation_failed',
        message: expect.any(String),
        fieldErrors: { alias: expect.any(String) },
      },
      {
        index: 1,
        ok: false,
        error: 'validation_failed',
        message: expect.any(String),
        fieldErrors: { alias: expect.any(String) },
      },
      { index: 2, ok: false, error: 'rate_limited', message: expect.any(String) },
    ]);
    expect(batchBody(res).stoppedEarly).toMatchObject({ reason: 'rate_limited', atIndex: 2 });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('answers 207 without a job when no entry is valid, with the headers', async () => {
    const res = await createBatch(tenant.live.secret, [{ webFallbackUrl: 'x' }, { alias: '' }]);
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ created: 0, failed: 2, notAttempted: 0 });
    expect(limitHeaders(res)).toEqual({ limit: '5', remaining: '5', reset: 3600 });
    expect(await creationRequestCount(kit.db, tenant.appId)).toBe(0);
  });
});
