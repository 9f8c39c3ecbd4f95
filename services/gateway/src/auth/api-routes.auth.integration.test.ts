import { generateSecretKey } from '@linkservice/keys';
import type { Tenant } from '@linkservice/testing';
import { createKey, createTenant, revokeKey } from '@linkservice/testing';
import { API_BASE_PATH, apiRoutes } from '../app';
import type { HttpMethod } from '../http/routes';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';

/**
 * The one auth test for every /api/v1 route. It walks apiRoutes(), the same list app.ts mounts,
 * so a route added there is covered here without touching this file.
 */

let gateway: TestGateway;
let tenant: Tenant;
let revokedSecret: string;
let routes: { method: HttpMethod; path: string }[];

beforeAll(async () => {
  gateway = await startGateway();
  tenant = await createTenant(gateway.deps.db);
  const revoked = await createKey(gateway.deps.db, tenant.appId, 'live');
  await revokeKey(gateway.deps.db, revoked.id);
  revokedSecret = revoked.secret;
  routes = apiRoutes(gateway.deps).map(({ method, path }) => ({
    method,
    // Any value will do for path parameters: auth is decided before anything reads them.
    path: `${API_BASE_PATH}${path.replace(/:(\w+)/g, (_m, name: string) => `${name}_0000000000`)}`,
  }));
});
afterAll(async () => {
  await gateway.stop();
});

const badCredentials: [string, () => Record<string, string>][] = [
  ['no Authorization header', () => ({})],
  ['another scheme', () => ({ authorization: `Basic ${tenant.live.secret}` })],
  ['no scheme', () => ({ authorization: tenant.live.secret })],
  ['a malformed key', () => ({ authorization: `Bearer ${tenant.live.secret.slice(0, 20)}` })],
  [
    'a publishable key',
    () => ({ authorization: `Bearer ${tenant.live.secret.replace('_sk_', '_pk_')}` }),
  ],
  ['an unknown key', () => ({ authorization: `Bearer ${generateSecretKey('test')}` })],
  ['a revoked key', () => ({ authorization: `Bearer ${revokedSecret}` })],
];

it('has routes to check', () => {
  expect(routes.length).toBeGreaterThan(0);
});

describe.each(badCredentials)('every /api/v1 route with %s', (_case, credentials) => {
  it('answers the identical 401 without reading the body', async () => {
    for (const { method, path } of routes) {
      // A malformed body: reading it would have produced 400 instead of 401.
      const res = await gateway.api(path, {
        method,
        headers: { ...credentials(), 'content-type': 'application/json' },
        rawBody: '{not json',
      });
      expect({ route: `${method} ${path}`, status: res.status, body: res.body }).toEqual({
        route: `${method} ${path}`,
        status: 401,
        body: { error: 'unauthorised', message: 'A valid secret API key is required.' },
      });
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });
});

describe('every /api/v1 route with a valid key', () => {
  it.each(['live', 'test'] as const)(
    'gets past auth and routing to the body check (%s key)',
    async (environment) => {
      for (const { method, path } of routes) {
        // Nothing is created or changed: the malformed body stops the request after routing.
        const res = await gateway.api(path, {
          method,
          headers: {
            authorization: `Bearer ${tenant[environment].secret}`,
            'content-type': 'application/json',
          },
          rawBody: '{not json',
        });
        expect({ route: `${method} ${path}`, status: res.status, error: res.body?.error }).toEqual({
          route: `${method} ${path}`,
          status: 400,
          error: 'invalid_body',
        });
      }
    },
  );

  it('answers 405 with Allow for a method a known path does not take', async () => {
    const byPath = new Map<string, Set<string>>();
    for (const { method, path } of routes) {
      byPath.set(path, (byPath.get(path) ?? new Set()).add(method));
    }
    for (const [path, methods] of byPath) {
      const unused = ['PUT', 'PATCH', 'DELETE', 'POST', 'GET'].find((m) => !methods.has(m))!;
      const res = await gateway.api(path, {
        method: unused,
        headers: { authorization: `Bearer ${tenant.live.secret}` },
      });
      expect(res.status).toBe(405);
      expect(res.body?.error).toBe('method_not_allowed');
      const allow = new Set([...methods, ...(methods.has('GET') ? ['HEAD'] : [])]);
      expect(new Set(res.headers.get('allow')?.split(', '))).toEqual(allow);
    }
  });
});
