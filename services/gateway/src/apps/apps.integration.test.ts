import type { Tenant } from '@linkservice/testing';
import { createTenant } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';

let gateway: TestGateway;
let alpha: Tenant;
let beta: Tenant;

beforeAll(async () => {
  gateway = await startGateway({ env: { LINK_DOMAIN: 'go.example.test' } });
  [alpha, beta] = await Promise.all([
    createTenant(gateway.deps.db, { name: 'Alpha' }),
    createTenant(gateway.deps.db, { name: 'Beta' }),
  ]);
});
afterAll(async () => {
  await gateway.stop();
});

function viewOf(tenant: Tenant, environment: 'live' | 'test') {
  return {
    app: {
      id: tenant.appId,
      name: tenant.name,
      subdomainKey: tenant.subdomainKey,
      // The live host even for a test key.
      linkHost: `${tenant.subdomainKey}.go.example.test`,
    },
    environment,
  };
}

describe('GET /app', () => {
  it("returns the key's app and the key's environment", async () => {
    const live = await gateway.api('/api/v1/app', { key: alpha.live.secret });
    expect(live.status).toBe(200);
    expect(live.body).toEqual(viewOf(alpha, 'live'));

    const test = await gateway.api('/api/v1/app', { key: alpha.test.secret });
    expect(test.body).toEqual(viewOf(alpha, 'test'));

    const other = await gateway.api('/api/v1/app', { key: beta.live.secret });
    expect(other.body).toEqual(viewOf(beta, 'live'));
  });
});

describe('GET /apps/:appId', () => {
  it('returns the same view for the own app id, in either environment', async () => {
    const live = await gateway.api(`/api/v1/apps/${alpha.appId}`, { key: alpha.live.secret });
    expect(live.status).toBe(200);
    expect(live.body).toEqual(viewOf(alpha, 'live'));
    const test = await gateway.api(`/api/v1/apps/${alpha.appId}`, { key: alpha.test.secret });
    expect(test.body).toEqual(viewOf(alpha, 'test'));
  });

  it('answers 404, never 403, for another app, and the same for an id that does not exist', async () => {
    const other = await gateway.api(`/api/v1/apps/${beta.appId}`, { key: alpha.live.secret });
    const missing = await gateway.api('/api/v1/apps/app_00000000000000000000000000', {
      key: alpha.live.secret,
    });
    expect(other.status).toBe(404);
    expect(missing.status).toBe(404);
    expect(other.body).toEqual({ error: 'not_found', message: 'No such app.' });
    expect(missing.body).toEqual(other.body);
  });

  it('answers 404 for an undecodable id', async () => {
    const res = await gateway.api('/api/v1/apps/%E0%A4%A', { key: alpha.live.secret });
    expect(res.status).toBe(404);
    expect(res.body?.error).toBe('not_found');
  });
});
