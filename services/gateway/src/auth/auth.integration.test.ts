import { newId } from '@linkservice/db';
import { generateSecretKey, hashSecretKey } from '@linkservice/keys';
import type { Tenant } from '@linkservice/testing';
import { createKey, createTenant, revokeKey } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';

let gateway: TestGateway;
let tenant: Tenant;

beforeAll(async () => {
  gateway = await startGateway();
  tenant = await createTenant(gateway.deps.db);
});
afterAll(async () => {
  await gateway.stop();
});

const UNAUTHORISED = { error: 'unauthorised', message: 'A valid secret API key is required.' };

async function expectUnauthorised(headers: Record<string, string>): Promise<void> {
  const res = await gateway.api('/api/v1/app', { headers });
  expect(res.status).toBe(401);
  expect(res.body).toEqual(UNAUTHORISED);
  expect(res.headers.get('www-authenticate')).toBe('Bearer');
  expect(res.headers.get('x-request-id')).toBeTruthy();
}

describe('bearer authentication', () => {
  it('accepts a live key and a test key, each in its own environment', async () => {
    const live = await gateway.api('/api/v1/app', { key: tenant.live.secret });
    expect(live.status).toBe(200);
    expect(live.body?.environment).toBe('live');
    const test = await gateway.api('/api/v1/app', { key: tenant.test.secret });
    expect(test.status).toBe(200);
    expect(test.body?.environment).toBe('test');
  });

  it('treats the scheme case-insensitively', async () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
      const res = await gateway.api('/api/v1/app', {
        headers: { authorization: `${scheme} ${tenant.live.secret}` },
      });
      expect(res.status).toBe(200);
    }
  });

  it('refuses a missing header', async () => {
    await expectUnauthorised({});
  });

  it('refuses other schemes and a bare key', async () => {
    const secret = tenant.live.secret;
    await expectUnauthorised({
      authorization: `Basic ${Buffer.from(`${secret}:`).toString('base64')}`,
    });
    await expectUnauthorised({ authorization: `Token ${secret}` });
    await expectUnauthorised({ authorization: secret });
    await expectUnauthorised({ authorization: 'Bearer' });
    await expectUnauthorised({ authorization: `Bearer ${secret} extra` });
  });

  it('refuses malformed keys', async () => {
    for (const key of [
      'nope',
      tenant.live.secret.slice(0, 15),
      `${tenant.live.secret}!`,
      tenant.live.secret.replace('ls_sk_', 'xx_sk_'),
    ]) {
      await expectUnauthorised({ authorization: `Bearer ${key}` });
    }
  });

  it('refuses publishable keys', async () => {
    const publishable = tenant.live.secret.replace('ls_sk_', 'ls_pk_');
    await expectUnauthorised({ authorization: `Bearer ${publishable}` });
  });

  it('refuses a well-formed key that does not exist', async () => {
    await expectUnauthorised({ authorization: `Bearer ${generateSecretKey('live')}` });
  });

  it('refuses a revoked key on the very next request', async () => {
    const key = await createKey(gateway.deps.db, tenant.appId, 'live');
    expect((await gateway.api('/api/v1/app', { key: key.secret })).status).toBe(200);
    await revokeKey(gateway.deps.db, key.id);
    await expectUnauthorised({ authorization: `Bearer ${key.secret}` });
  });

  it('refuses a key whose record names another environment than its text', async () => {
    // A test-looking secret stored as a live key: the record wins, and the mismatch is refused.
    const secret = generateSecretKey('test');
    await gateway.deps.db
      .insertInto('api_keys')
      .values({
        id: newId('key'),
        app_id: tenant.appId,
        environment: 'live',
        key_hash: hashSecretKey(secret),
      })
      .execute();
    await expectUnauthorised({ authorization: `Bearer ${secret}` });
  });

  it('answers 401 for unknown paths too, before any routing', async () => {
    const res = await gateway.api('/api/v1/no-such-thing', { method: 'POST' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORISED);
  });
});
