import { newId } from '@linkservice/db';
import type { KeyType } from '@linkservice/db';
import {
  generatePublishableKey,
  generateSecretKey,
  hashSecretKey,
  type KeyEnvironment,
} from '@linkservice/keys';
import type { Tenant } from '@linkservice/testing';
import { createKey, createTenant, revokeKey } from '@linkservice/testing';
import { API_BASE_PATH, apiRoutes, SDK_BASE_PATH, sdkRoutes } from '../app';
import type { ApiRoute, HttpMethod } from '../http/routes';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';

/**
 * The one auth test for every route: apiRoutes() (secret keys, /api/v1) and sdkRoutes()
 * (publishable keys, /api/v1/sdk), the same lists app.ts mounts, so a route added to either is
 * covered here without touching this file.
 */

let gateway: TestGateway;
let tenant: Tenant;
let revokedSecret: string;
let revokedPublishable: string;
/** Texts whose record disagrees with them (type or environment): refused like unknown keys. */
let mismatched: {
  secretTextPublishableRecord: string;
  publishableTextSecretRecord: string;
  publishableTestTextLiveRecord: string;
};
let secretRoutes: { method: HttpMethod; path: string }[];
let appRoutes: { method: HttpMethod; path: string }[];
/** The routes above with a parameter, named by an undecodable value. */
let undecodableSecretRoutes: ReturnType<typeof withUndecodableParameters>;
let undecodableAppRoutes: ReturnType<typeof withUndecodableParameters>;

const SECRET_UNAUTHORISED = {
  error: 'unauthorised',
  message: 'A valid secret API key is required.',
};
const SDK_UNAUTHORISED = {
  error: 'unauthorised',
  message: 'A valid publishable key is required.',
};

/** By default an id that names nothing; any value will do: auth is decided before anything reads it. */
function walkable(
  base: string,
  routes: ApiRoute[],
  value = (name: string) => `${name}_0000000000`,
) {
  return routes.map(({ method, path }) => ({
    method,
    path: `${base}${path.replace(/:(\w+)/g, (_m, name: string) => value(name))}`,
  }));
}

/** %-escapes that do not decode: not hex, cut short, or bytes that are not UTF-8. */
const UNDECODABLE = ['%ZZ', '%E0%A4%A', '%FF'];

/**
 * The routes with a path parameter, once per undecodable value in its place, each with the path
 * that names an unknown id instead (what the undecodable one must answer like).
 */
function withUndecodableParameters(base: string, routes: ApiRoute[]) {
  const withParameter = routes.filter(({ path }) => path.includes('/:'));
  const unknownIds = walkable(base, withParameter);
  return UNDECODABLE.flatMap((escape) =>
    walkable(base, withParameter, () => escape).map((route, index) => ({
      ...route,
      unknownIdPath: unknownIds[index].path,
    })),
  );
}

/** A key whose text says one thing and whose stored record another. */
async function storeMismatched(
  text: string,
  appId: string,
  record: { environment: KeyEnvironment; type: KeyType },
): Promise<string> {
  await gateway.deps.db
    .insertInto('api_keys')
    .values({ id: newId('key'), app_id: appId, ...record, key_hash: hashSecretKey(text) })
    .execute();
  return text;
}

beforeAll(async () => {
  gateway = await startGateway();
  tenant = await createTenant(gateway.deps.db);
  const revoked = await createKey(gateway.deps.db, tenant.appId, 'live');
  const revokedPk = await createKey(gateway.deps.db, tenant.appId, 'live', 'publishable');
  await revokeKey(gateway.deps.db, revoked.id);
  await revokeKey(gateway.deps.db, revokedPk.id);
  revokedSecret = revoked.secret;
  revokedPublishable = revokedPk.secret;
  mismatched = {
    secretTextPublishableRecord: await storeMismatched(generateSecretKey('live'), tenant.appId, {
      environment: 'live',
      type: 'publishable',
    }),
    publishableTextSecretRecord: await storeMismatched(
      generatePublishableKey('live'),
      tenant.appId,
      { environment: 'live', type: 'secret' },
    ),
    publishableTestTextLiveRecord: await storeMismatched(
      generatePublishableKey('test'),
      tenant.appId,
      { environment: 'live', type: 'publishable' },
    ),
  };
  secretRoutes = walkable(API_BASE_PATH, apiRoutes(gateway.deps));
  appRoutes = walkable(SDK_BASE_PATH, sdkRoutes(gateway.deps));
  undecodableSecretRoutes = withUndecodableParameters(API_BASE_PATH, apiRoutes(gateway.deps));
  undecodableAppRoutes = withUndecodableParameters(SDK_BASE_PATH, sdkRoutes(gateway.deps));
});

afterAll(async () => {
  await gateway.stop();
});

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** A request whose body does not parse: reading it answers 400, so another answer never read it. */
function sendMalformedBody(method: HttpMethod, path: string, headers: Record<string, string>) {
  return gateway.api(path, {
    method,
    headers: { ...headers, 'content-type': 'application/json' },
    rawBody: '{not json',
  });
}

const badSecretCredentials: [string, () => Record<string, string>][] = [
  ['no Authorization header', () => ({})],
  ['another scheme', () => ({ authorization: `Basic ${tenant.live.secret}` })],
  ['no scheme', () => ({ authorization: tenant.live.secret })],
  ['a malformed key', () => bearer(tenant.live.secret.slice(0, 20))],
  ['an unknown publishable key', () => bearer(tenant.live.secret.replace('_sk_', '_pk_'))],
  ['a valid live publishable key', () => bearer(tenant.publishable.live.secret)],
  ['a valid test publishable key', () => bearer(tenant.publishable.test.secret)],
  ['a secret text stored as publishable', () => bearer(mismatched.secretTextPublishableRecord)],
  ['an unknown key', () => bearer(generateSecretKey('test'))],
  ['a revoked key', () => bearer(revokedSecret)],
];

const badPublishableCredentials: [string, () => Record<string, string>][] = [
  ['no Authorization header', () => ({})],
  ['another scheme', () => ({ authorization: `Basic ${tenant.publishable.live.secret}` })],
  ['no scheme', () => ({ authorization: tenant.publishable.live.secret })],
  ['a malformed key', () => bearer(tenant.publishable.live.secret.slice(0, 20))],
  ['a valid live secret key', () => bearer(tenant.live.secret)],
  ['a valid test secret key', () => bearer(tenant.test.secret)],
  ['an unknown secret key', () => bearer(generateSecretKey('live'))],
  ['an unknown publishable key', () => bearer(generatePublishableKey('live'))],
  ['a revoked publishable key', () => bearer(revokedPublishable)],
  ['a publishable text stored as secret', () => bearer(mismatched.publishableTextSecretRecord)],
  [
    'a test publishable text stored for live',
    () => bearer(mismatched.publishableTestTextLiveRecord),
  ],
];

it('has routes to check', () => {
  expect(secretRoutes.length).toBeGreaterThan(0);
  expect(appRoutes.length).toBeGreaterThan(0);
  // The parameters an attacker probes with undecodable escapes (issue 25).
  const named = (routes: { method: string; path: string }[]) =>
    routes.map(({ method, path }) => `${method} ${path}`);
  expect(named(undecodableSecretRoutes)).toEqual(
    expect.arrayContaining([
      `GET ${API_BASE_PATH}/links/%ZZ`,
      `GET ${API_BASE_PATH}/apps/%ZZ`,
      `PATCH ${API_BASE_PATH}/webhooks/%ZZ`,
      `POST ${API_BASE_PATH}/webhooks/%ZZ/deliveries/%ZZ/retry`,
    ]),
  );
  expect(named(undecodableAppRoutes)).toContain(`DELETE ${SDK_BASE_PATH}/installs/%ZZ`);
});

describe.each(badSecretCredentials)('every /api/v1 route with %s', (_case, credentials) => {
  it('answers the identical 401 without reading the body, whatever the path names', async () => {
    for (const { method, path } of [...secretRoutes, ...undecodableSecretRoutes]) {
      const res = await sendMalformedBody(method, path, credentials());
      expect({ route: `${method} ${path}`, status: res.status, body: res.body }).toEqual({
        route: `${method} ${path}`,
        status: 401,
        body: SECRET_UNAUTHORISED,
      });
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(res.headers.get('x-request-id')).toBeTruthy();
    }
  });
});

describe.each(badPublishableCredentials)(
  'every /api/v1/sdk route with %s',
  (_case, credentials) => {
    it('answers the identical 401, no-store, whatever the body', async () => {
      // An unknown path too: without a good key nothing tells a route from no route.
      const unknown = { method: 'POST' as const, path: `${SDK_BASE_PATH}/no-such-thing` };
      for (const { method, path } of [...appRoutes, ...undecodableAppRoutes, unknown]) {
        const res = await sendMalformedBody(method, path, credentials());
        expect({ route: `${method} ${path}`, status: res.status, text: res.text }).toEqual({
          route: `${method} ${path}`,
          status: 401,
          text: JSON.stringify(SDK_UNAUTHORISED),
        });
        expect(res.headers.get('www-authenticate')).toBe('Bearer');
        expect(res.headers.get('cache-control')).toBe('no-store');
        expect(res.headers.get('x-request-id')).toBeTruthy();
      }
    });
  },
);

describe('every /api/v1 route with a valid secret key', () => {
  it.each(['live', 'test'] as const)(
    'gets past auth and routing to the body check (%s key)',
    async (environment) => {
      await expectBodyCheckReached(secretRoutes, tenant[environment].secret);
    },
  );

  it('answers 405 with Allow for a method a known path does not take', async () => {
    await expectMethodNotAllowed(secretRoutes, tenant.live.secret);
  });
});

describe('every /api/v1/sdk route with a valid publishable key', () => {
  it.each(['live', 'test'] as const)(
    'gets past auth and routing to the body check (%s key)',
    async (environment) => {
      await expectBodyCheckReached(appRoutes, tenant.publishable[environment].secret, 'no-store');
    },
  );

  it('answers 405 with Allow for a method a known path does not take', async () => {
    await expectMethodNotAllowed(appRoutes, tenant.publishable.live.secret);
  });

  it('answers 404 for an unknown path, without reaching the secret-key API', async () => {
    for (const method of ['GET', 'POST', 'DELETE']) {
      const res = await gateway.api(`${SDK_BASE_PATH}/no-such-thing`, {
        method,
        key: tenant.publishable.live.secret,
      });
      expect({ method, status: res.status, error: res.body?.error }).toEqual({
        method,
        status: 404,
        error: 'not_found',
      });
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
    // A secret-key path under the SDK prefix is no route of the SDK either.
    const app = await gateway.api(`${SDK_BASE_PATH}/app`, { key: tenant.publishable.live.secret });
    expect(app.status).toBe(404);
  });
});

describe('a path parameter that does not decode, with a valid key', () => {
  /** The answer of a request, as far as telling one object from another goes. */
  async function answerOf(method: HttpMethod, path: string, key: string) {
    const res = await gateway.api(path, {
      method,
      key,
      // PATCH needs a body to reach its lookup; `{}` changes nothing.
      ...(['POST', 'PUT', 'PATCH'].includes(method) && { body: {} }),
    });
    return {
      status: res.status,
      text: res.text,
      cacheControl: res.headers.get('cache-control'),
      contentType: res.headers.get('content-type'),
    };
  }

  it.each([
    ['/api/v1', () => undecodableSecretRoutes, () => tenant.live.secret],
    ['/api/v1/sdk', () => undecodableAppRoutes, () => tenant.publishable.live.secret],
  ])('answers every %s route exactly as for an unknown id', async (_base, routes, key) => {
    for (const { method, path, unknownIdPath } of routes()) {
      const unknownId = await answerOf(method, unknownIdPath, key());
      expect(unknownId.status).toBe(404);
      expect({ route: `${method} ${path}`, ...(await answerOf(method, path, key())) }).toEqual({
        route: `${method} ${path}`,
        ...unknownId,
      });
    }
  });
});

/**
 * Each route gets past auth and routing to the body check: its malformed body stops it there,
 * so nothing is created or changed.
 */
async function expectBodyCheckReached(
  routes: { method: HttpMethod; path: string }[],
  key: string,
  cacheControl?: string,
): Promise<void> {
  for (const { method, path } of routes) {
    const res = await sendMalformedBody(method, path, bearer(key));
    expect({ route: `${method} ${path}`, status: res.status, error: res.body?.error }).toEqual({
      route: `${method} ${path}`,
      status: 400,
      error: 'invalid_body',
    });
    if (cacheControl !== undefined) expect(res.headers.get('cache-control')).toBe(cacheControl);
  }
}

async function expectMethodNotAllowed(
  routes: { method: HttpMethod; path: string }[],
  key: string,
): Promise<void> {
  const byPath = new Map<string, Set<string>>();
  for (const { method, path } of routes) {
    byPath.set(path, (byPath.get(path) ?? new Set()).add(method));
  }
  for (const [path, methods] of byPath) {
    const unused = ['PUT', 'PATCH', 'DELETE', 'POST', 'GET'].find((m) => !methods.has(m))!;
    const res = await gateway.api(path, { method: unused, key });
    expect({ path, status: res.status, error: res.body?.error }).toEqual({
      path,
      status: 405,
      error: 'method_not_allowed',
    });
    const allow = new Set([...methods, ...(methods.has('GET') ? ['HEAD'] : [])]);
    expect(new Set(res.headers.get('allow')?.split(', '))).toEqual(allow);
  }
}
