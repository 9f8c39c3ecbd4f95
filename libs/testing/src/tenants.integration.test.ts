import { hashSecretKey } from '@linkservice/keys';
import { testDatabase } from './database';
import { createKey, createTenant, revokeKey } from './tenants';

describe('createTenant', () => {
  const handle = testDatabase(2);
  afterAll(() => handle.close());

  it('stores an app with a live and a test key, as hashes only', async () => {
    const tenant = await createTenant(handle.db, { linkAllowance: 5 });
    expect(tenant.live.secret).toMatch(/^ls_sk_live_/);
    expect(tenant.test.secret).toMatch(/^ls_sk_test_/);
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
      .select(['id', 'environment', 'key_hash', 'revoked_at'])
      .where('app_id', '=', tenant.appId)
      .orderBy('environment')
      .execute();
    expect(keys).toEqual([
      {
        id: tenant.live.id,
        environment: 'live',
        key_hash: hashSecretKey(tenant.live.secret),
        revoked_at: null,
      },
      {
        id: tenant.test.id,
        environment: 'test',
        key_hash: hashSecretKey(tenant.test.secret),
        revoked_at: null,
      },
    ]);
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
