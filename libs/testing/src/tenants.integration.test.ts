import { hashSecretKey } from '@linkservice/keys';
import { testDatabase } from './database';
import type { TenantKey } from './tenants';
import { createKey, createTenant, revokeKey } from './tenants';

describe('createTenant', () => {
  const handle = testDatabase(2);
  afterAll(() => handle.close());

  it('stores an app with a secret and a publishable key per environment, as hashes only', async () => {
    const tenant = await createTenant(handle.db, { linkAllowance: 5 });
    expect(tenant.live.secret).toMatch(/^ls_sk_live_/);
    expect(tenant.test.secret).toMatch(/^ls_sk_test_/);
    expect(tenant.publishable.live.secret).toMatch(/^ls_pk_live_/);
    expect(tenant.publishable.test.secret).toMatch(/^ls_pk_test_/);
    const app = await handle.db
      .selectFrom('apps')
      .selectAll()
      .where('id', '=', tenant.appId)
      .executeTakeFirstOrThrow();
    expect(app).toMatchObject({
      name: tenant.name,
      subdomain_key: tenant.subdomainKey,
      link_allowance: 5,
    });
    const keys = await handle.db
      .selectFrom('api_keys')
      .select(['id', 'environment', 'type', 'key_hash', 'revoked_at'])
      .where('app_id', '=', tenant.appId)
      .orderBy('environment')
      .orderBy('type')
      .execute();
    const stored = (key: TenantKey) => ({
      id: key.id,
      environment: key.environment,
      type: key.type,
      key_hash: hashSecretKey(key.secret),
      revoked_at: null,
    });
    expect(keys).toEqual([
      stored(tenant.publishable.live),
      stored(tenant.live),
      stored(tenant.publishable.test),
      stored(tenant.test),
    ]);
    expect([tenant.live.type, tenant.publishable.live.type]).toEqual(['secret', 'publishable']);
  });

  it('adds and revokes keys', async () => {
    const tenant = await createTenant(handle.db);
    const extra = await createKey(handle.db, tenant.appId, 'live');
    await revokeKey(handle.db, extra.id);
    const row = await handle.db
      .selectFrom('api_keys')
      .select('revoked_at')
      .where('id', '=', extra.id)
      .executeTakeFirstOrThrow();
    expect(row.revoked_at).toBeInstanceOf(Date);
  });
});
