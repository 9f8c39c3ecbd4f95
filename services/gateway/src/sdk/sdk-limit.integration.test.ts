import type { Redis } from 'ioredis';
import { generatePublishableKey, hashSecretKey } from '@linkservice/keys';
import { closeRedis } from '@linkservice/lifecycle';
import type { ApiResponse, Tenant } from '@linkservice/testing';
import {
  createKey,
  createTenant,
  insertLink,
  revokeKey,
  scanKeys,
  unreachableRedis,
} from '@linkservice/testing';
import { budgetKey } from '../limits/sdk-limiter';
import type { TestGateway } from '../testing';
import { StatementCounter, startGateway } from '../testing';

/** The SDK abuse limit: SDK_RATE_LIMIT_PER_MINUTE per publishable key and client address. */

const DOMAIN = 'go.example.test';
const LIMIT = 3;
const RESOLVE = '/api/v1/sdk/resolve';

const statements = new StatementCounter();

let gateway: TestGateway;
let tenant: Tenant;
let url: string;

beforeAll(async () => {
  gateway = await startGateway({
    env: { LINK_DOMAIN: DOMAIN, SDK_RATE_LIMIT_PER_MINUTE: String(LIMIT) },
    deps: statements.countingDeps,
  });
  tenant = await createTenant(gateway.deps.db);
  const link = await insertLink(gateway.deps.db, { appId: tenant.appId, environment: 'live' });
  url = `https://${tenant.subdomainKey}.${DOMAIN}/${link.alias}`;
});

afterAll(async () => {
  await gateway.stop();
});

/** A fresh publishable key, so each test starts with a whole budget. */
async function freshKey(): Promise<string> {
  return (await createKey(gateway.deps.db, tenant.appId, 'live', 'publishable')).secret;
}

function resolveWith(
  key: string,
  headers: Record<string, string> = {},
  on: TestGateway = gateway,
): Promise<ApiResponse> {
  return on.api(RESOLVE, { key, body: { url }, headers });
}

async function useUp(key: string, headers: Record<string, string> = {}, on = gateway) {
  for (let i = 0; i < LIMIT; i++) {
    expect((await resolveWith(key, headers, on)).status).toBe(200);
  }
}

function expectRateLimited(res: ApiResponse): void {
  expect(res.status).toBe(429);
  expect(res.body).toEqual({ error: 'rate_limited', message: expect.any(String) });
  const retryAfter = res.headers.get('retry-after');
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('x-request-id')).toBeTruthy();
}

describe('the SDK abuse limit', () => {
  it('answers 429 with Retry-After once the budget is used up', async () => {
    const key = await freshKey();
    await useUp(key);
    expectRateLimited(await resolveWith(key));
    expectRateLimited(await resolveWith(key));
  });

  it('is one budget for every SDK path, whatever it answers', async () => {
    const key = await freshKey();
    expect((await gateway.api(RESOLVE, { key, method: 'GET' })).status).toBe(405);
    expect((await gateway.api('/api/v1/sdk/no-such-thing', { key, method: 'POST' })).status).toBe(
      404,
    );
    expect((await resolveWith(key)).status).toBe(200);
    expectRateLimited(await resolveWith(key));
  });

  it('answers 429 before anything about the body', async () => {
    const key = await freshKey();
    await useUp(key);
    expectRateLimited(await gateway.api(RESOLVE, { key, body: { nope: 1 } }));
  });

  it('gives each key its own budget', async () => {
    const spent = await freshKey();
    await useUp(spent);
    expectRateLimited(await resolveWith(spent));
    const other = await freshKey();
    expect((await resolveWith(other)).status).toBe(200);
    // A key of the other environment, too.
    const testLink = await insertLink(gateway.deps.db, {
      appId: tenant.appId,
      environment: 'test',
    });
    const res = await gateway.api(RESOLVE, {
      key: tenant.publishable.test.secret,
      body: { url: `https://${tenant.subdomainKey}-test.${DOMAIN}/${testLink.alias}` },
    });
    expect(res.status).toBe(200);
  });

  it('answers a bad key with 401 even when its budget is spent', async () => {
    const unknown = generatePublishableKey('live');
    for (let i = 0; i < LIMIT + 2; i++) {
      expect((await resolveWith(unknown)).status).toBe(401);
    }
    const key = await createKey(gateway.deps.db, tenant.appId, 'live', 'publishable');
    await useUp(key.secret);
    await revokeKey(gateway.deps.db, key.id);
    const res = await resolveWith(key.secret);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: 'unauthorised',
      message: 'A valid publishable key is required.',
    });
  });

  it('still checks the key in the one statement when the budget is spent', async () => {
    const key = await freshKey();
    await useUp(key);
    statements.count = 0;
    expectRateLimited(await resolveWith(key));
    expect(statements.count).toBe(1);
  });

  it('ignores X-Forwarded-For without TRUST_PROXY: the peer is the client', async () => {
    const key = await freshKey();
    await useUp(key, { 'x-forwarded-for': '203.0.113.1' });
    expectRateLimited(await resolveWith(key, { 'x-forwarded-for': '203.0.113.2' }));
    expectRateLimited(await resolveWith(key));
  });

  it('spends no budget and no database work on preflights', async () => {
    const key = await freshKey();
    statements.count = 0;
    for (let i = 0; i < LIMIT * 3; i++) {
      const res = await gateway.api(RESOLVE, {
        method: 'OPTIONS',
        headers: {
          origin: 'https://shop.example.com',
          'access-control-request-method': 'POST',
          authorization: `Bearer ${key}`,
        },
      });
      expect(res.status).toBe(204);
    }
    expect(statements.count).toBe(0);
    await useUp(key);
  });

  it('names budgets in Redis by a hash: neither the key nor the address is stored', async () => {
    const key = await freshKey();
    expect((await resolveWith(key)).status).toBe(200);
    const prefix = `${gateway.deps.config.REDIS_PREFIX}:sdk-limit`;
    const names = await scanKeys(gateway.deps.redis, `${prefix}*`);
    const hash = hashSecretKey(key);
    expect(names).toContain(`${prefix}:${budgetKey(hash, '127.0.0.1')}`);
    const joined = names.join('\n');
    for (const forbidden of [
      key,
      key.slice('ls_pk_live_'.length),
      hash.toString('hex'),
      hash.toString('base64url'),
      hash.toString('base64'),
      '127.0.0.1',
    ]) {
      expect(joined).not.toContain(forbidden);
    }
    // The counter expires with its window.
    const ttl = await gateway.deps.redis.pttl(`${prefix}:${budgetKey(hash, '127.0.0.1')}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });
});

describe('the SDK abuse limit behind a trusted proxy (TRUST_PROXY=true)', () => {
  let proxied: TestGateway;
  beforeAll(async () => {
    proxied = await startGateway({
      env: { LINK_DOMAIN: DOMAIN, SDK_RATE_LIMIT_PER_MINUTE: String(LIMIT), TRUST_PROXY: 'true' },
    });
  });
  afterAll(async () => {
    await proxied.stop();
  });

  it('gives each forwarded client address its own budget', async () => {
    const key = await freshKey();
    await useUp(key, { 'x-forwarded-for': '203.0.113.1' }, proxied);
    expectRateLimited(await resolveWith(key, { 'x-forwarded-for': '203.0.113.1' }, proxied));
    // The client is the left-most address a trusted chain names.
    expectRateLimited(
      await resolveWith(key, { 'x-forwarded-for': '203.0.113.1, 10.0.0.9' }, proxied),
    );
    expect((await resolveWith(key, { 'x-forwarded-for': '203.0.113.2' }, proxied)).status).toBe(
      200,
    );
    expect((await resolveWith(key, {}, proxied)).status).toBe(200);
  });

  it('keys the budget by the forwarded address, hashed', async () => {
    const key = await freshKey();
    expect((await resolveWith(key, { 'x-forwarded-for': '198.51.100.23' }, proxied)).status).toBe(
      200,
    );
    const name = `${proxied.deps.config.REDIS_PREFIX}:sdk-limit:${budgetKey(hashSecretKey(key), '198.51.100.23')}`;
    expect(await proxied.deps.redis.get(name)).toBe('1');
  });
});

describe('the SDK abuse limit with Redis unreachable', () => {
  let cut: TestGateway;
  let deadRedis: Redis;
  beforeAll(async () => {
    deadRedis = unreachableRedis();
    cut = await startGateway({
      env: { LINK_DOMAIN: DOMAIN },
      deps: (deps) => ({ ...deps, redis: deadRedis }),
    });
  });
  afterAll(async () => {
    await cut.stop();
    await closeRedis(deadRedis);
  });

  it('answers 503 unavailable with Retry-After: the limit cannot be kept', async () => {
    const res = await resolveWith(tenant.publishable.live.secret, {}, cut);
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: 'unavailable',
      message: 'The service is temporarily unavailable; retry shortly.',
    });
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('still answers a bad key with 401', async () => {
    const res = await resolveWith(generatePublishableKey('live'), {}, cut);
    expect(res.status).toBe(401);
  });

  it('leaves the secret-key API as it was', async () => {
    expect((await cut.api('/api/v1/app', { key: tenant.live.secret })).status).toBe(200);
  });
});
