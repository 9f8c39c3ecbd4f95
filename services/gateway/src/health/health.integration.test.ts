import type { Redis } from 'ioredis';
import { generateSecretKey } from '@linkservice/keys';
import { closeRedis } from '@linkservice/lifecycle';
import { createTenant, freePort, unreachableRedis } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';

describe('with Postgres and Redis up', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(async () => {
    await gateway.stop();
  });

  it('/healthz answers without auth', async () => {
    const res = await gateway.api('/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('/readyz answers 200 without auth', async () => {
    const res = await gateway.api('/readyz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready' });
  });
});

describe('with Postgres unreachable', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    const port = await freePort();
    gateway = await startGateway({
      env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/linkservice` },
    });
  });
  afterAll(async () => {
    await gateway.stop();
  });

  it('/healthz still answers: the process is alive', async () => {
    expect((await gateway.api('/healthz')).status).toBe(200);
  });

  it('/readyz answers 503 unavailable with Retry-After', async () => {
    const res = await gateway.api('/readyz', { headers: { 'x-request-id': 'ready-1' } });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: 'unavailable',
      message: expect.stringContaining('postgres'),
    });
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('x-request-id')).toBe('ready-1');
  });

  it('an authenticated request answers 503 unavailable with Retry-After, without internals', async () => {
    const res = await gateway.api('/api/v1/app', { key: generateSecretKey('live') });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      error: 'unavailable',
      message: 'The service is temporarily unavailable; retry shortly.',
    });
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.text).not.toContain('ECONNREFUSED');
  });

  it('a malformed key is still 401: it never reaches the database', async () => {
    const res = await gateway.api('/api/v1/app', { key: 'ls_sk_live_short' });
    expect(res.status).toBe(401);
  });
});

describe('with Redis unreachable', () => {
  let gateway: TestGateway;
  let deadRedis: Redis;
  beforeAll(async () => {
    // Only the commands client /readyz probes: the creation client's Redis is another test's.
    deadRedis = unreachableRedis();
    gateway = await startGateway({ deps: (deps) => ({ ...deps, redis: deadRedis }) });
  });
  afterAll(async () => {
    await gateway.stop();
    await closeRedis(deadRedis);
  });

  it('/readyz answers 503 naming redis', async () => {
    const res = await gateway.api('/readyz');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ error: 'unavailable', message: expect.stringContaining('redis') });
    expect(res.body?.message).not.toContain('postgres');
    expect(res.headers.get('retry-after')).toBe('5');
  });

  it('reads that need only Postgres keep working', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const res = await gateway.api('/api/v1/app', { key: tenant.live.secret });
    expect(res.status).toBe(200);
  });
});

describe('with a database that is reachable but broken', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    // The server's maintenance database has none of our tables: every query is a bug-like failure.
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = '/postgres';
    gateway = await startGateway({ env: { DATABASE_URL: url.toString() } });
  });
  afterAll(async () => {
    await gateway.stop();
  });

  it('answers 500 internal without leaking the SQL error', async () => {
    const res = await gateway.api('/api/v1/app', { key: generateSecretKey('live') });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: 'internal', message: 'Something went wrong on our side.' });
    expect(res.text).not.toContain('api_keys');
  });
});
