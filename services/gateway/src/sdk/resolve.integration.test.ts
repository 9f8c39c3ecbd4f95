import { clickTokenPattern, parseClickTokenValue } from '@linkservice/link-cache';
import type { Environment, LinkRow } from '@linkservice/db';
import { generatePublishableKey } from '@linkservice/keys';
import type { ApiResponse, LinkSeed, Tenant } from '@linkservice/testing';
import { createKey, insertLink, revokeKey } from '@linkservice/testing';
import { MAX_BODY_BYTES } from '../http/json-body';
import type { TestGateway } from '../testing';
import { StatementCounter, startGatewayWithTenants } from '../testing';

/** POST /api/v1/sdk/resolve, app-interface.md "POST /sdk/resolve", against Postgres and Redis. */

const DOMAIN = 'go.example.test';
const RESOLVE = '/api/v1/sdk/resolve';
const NOT_FOUND = { error: 'not_found', message: 'No such link.' };

const statements = new StatementCounter();

let gateway: TestGateway;
let alpha: Tenant;
let beta: Tenant;

beforeAll(async () => {
  ({ gateway, alpha, beta } = await startGatewayWithTenants({
    env: { LINK_DOMAIN: DOMAIN },
    deps: statements.countingDeps,
  }));
});

afterAll(async () => {
  await gateway.stop();
});

function seed(tenant: Tenant, environment: Environment = 'live', values: LinkSeed = {}) {
  return insertLink(gateway.deps.db, { appId: tenant.appId, environment }, values);
}

function hostOf(tenant: Tenant, environment: Environment): string {
  return environment === 'live'
    ? `${tenant.subdomainKey}.${DOMAIN}`
    : `${tenant.subdomainKey}-test.${DOMAIN}`;
}

function urlOf(tenant: Tenant, environment: Environment, alias: string): string {
  return `https://${hostOf(tenant, environment)}/${alias}`;
}

function resolve(body: unknown, key = alpha.publishable.live.secret): Promise<ApiResponse> {
  return gateway.api(RESOLVE, { key, body });
}

/** One resolve and how many statements the gateway ran for it. */
async function counted(body: unknown, key = alpha.publishable.live.secret) {
  statements.count = 0;
  const res = await resolve(body, key);
  return { res, statements: statements.count };
}

function expectNoStore(res: ApiResponse): void {
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('x-request-id')).toBeTruthy();
}

describe('POST /sdk/resolve: what resolves', () => {
  it('answers the link, its deepLinkData and the query, no-store', async () => {
    const link = await seed(alpha, 'live', {
      deep_link_data: { screen: 'promo', nested: { list: [1, 'two', null], yes: true } },
    });
    const res = await resolve({ url: `${urlOf(alpha, 'live', link.alias)}?utm_source=mail` });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expectNoStore(res);
    expect(res.body).toEqual({
      link: {
        id: link.id,
        alias: link.alias,
        url: urlOf(alpha, 'live', link.alias),
        environment: 'live',
      },
      deepLinkData: { screen: 'promo', nested: { list: [1, 'two', null], yes: true } },
      query: { utm_source: 'mail' },
    });
    // Exactly these members, in this order.
    expect(Object.keys(JSON.parse(res.text) as object)).toEqual(['link', 'deepLinkData', 'query']);
  });

  it("never answers the scan marker of a QR code's URL (qr=1) in the query", async () => {
    const link = await seed(alpha);
    const url = urlOf(alpha, 'live', link.alias);
    for (const [query, expected] of [
      ['?qr=1', {}],
      ['?utm_source=poster&qr=1&x=%20y', { utm_source: 'poster', x: ' y' }],
      ['?qr=10', { qr: '10' }],
    ] as const) {
      const res = await resolve({ url: `${url}${query}` });
      expect({
        query,
        status: res.status,
        answered: (res.body as { query: unknown }).query,
      }).toEqual({ query, status: 200, answered: expected });
    }
  });

  it('resolves a test link on the test host with a test key', async () => {
    const link = await seed(alpha, 'test', { deep_link_data: { env: 'test' } });
    const res = await resolve(
      { url: urlOf(alpha, 'test', link.alias) },
      alpha.publishable.test.secret,
    );
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      link: {
        id: link.id,
        alias: link.alias,
        url: urlOf(alpha, 'test', link.alias),
        environment: 'test',
      },
      deepLinkData: { env: 'test' },
      query: {},
    });
  });

  it('answers deepLinkData null for a link without any', async () => {
    const link = await seed(alpha);
    const res = await resolve({ url: urlOf(alpha, 'live', link.alias) });
    expect(res.status).toBe(200);
    expect(res.text).toContain('"deepLinkData":null');
  });

  it('takes http and https, any port, any case of host, query and fragment', async () => {
    const link = await seed(alpha, 'live', { deep_link_data: { n: 1 } });
    const host = hostOf(alpha, 'live');
    const variants: [string, Record<string, string>][] = [
      [`http://${host}/${link.alias}`, {}],
      [`https://${host}:8443/${link.alias}`, {}],
      [`http://${host}:80/${link.alias}`, {}],
      [`https://${host.toUpperCase()}/${link.alias}`, {}],
      [`https://${host}./${link.alias}`, {}],
      [`https://${host}/${link.alias}#section-2`, {}],
      [`https://${host}/${link.alias}?a=1&b=two#frag?c=3`, { a: '1', b: 'two' }],
      [`https://${host}/${link.alias}?a=1&a=2&a=last`, { a: 'last' }],
      [
        `https://${host}/${link.alias}?empty=&x=%20y%26z&plus=a+b`,
        {
          empty: '',
          x: ' y&z',
          plus: 'a b',
        },
      ],
      [`https://${host}/${link.alias}?`, {}],
    ];
    for (const [url, query] of variants) {
      const res = await resolve({ url });
      expect({ url, status: res.status, body: res.body }).toEqual({
        url,
        status: 200,
        body: {
          link: {
            id: link.id,
            alias: link.alias,
            url: urlOf(alpha, 'live', link.alias),
            environment: 'live',
          },
          deepLinkData: { n: 1 },
          query,
        },
      });
    }
  });

  it('keeps deepLinkData exact, a top-level "__proto__" member included', async () => {
    const data = JSON.parse(
      '{"__proto__":{"polluted":true},"screen":"promo","constructor":"c","list":[{"__proto__":1}]}',
    ) as Record<string, unknown>;
    const link = await seed(alpha, 'live', { deep_link_data: data });
    const res = await resolve({ url: urlOf(alpha, 'live', link.alias) });
    expect(res.status).toBe(200);
    const parsed = JSON.parse(res.text) as { deepLinkData: Record<string, unknown> };
    expect(Object.keys(parsed.deepLinkData).sort()).toEqual(
      ['__proto__', 'constructor', 'list', 'screen'].sort(),
    );
    expect(Object.getOwnPropertyDescriptor(parsed.deepLinkData, '__proto__')?.value).toEqual({
      polluted: true,
    });
    expect(res.text).toContain('"__proto__":{"polluted":true}');
    expect(res.text).toContain('"list":[{"__proto__":1}]');
    // The same data the secret API shows for the link.
    const viaApi = await gateway.api(`/api/v1/links/${link.id}`, { key: alpha.live.secret });
    expect(viaApi.text).toContain(JSON.stringify(parsed.deepLinkData));
  });

  it('keeps a query parameter named __proto__ as a parameter', async () => {
    const link = await seed(alpha);
    const res = await resolve({
      url: `${urlOf(alpha, 'live', link.alias)}?__proto__=x&constructor=y&__proto__=last`,
    });
    expect(res.status).toBe(200);
    const { query } = JSON.parse(res.text) as { query: Record<string, string> };
    expect(Object.getOwnPropertyDescriptor(query, '__proto__')?.value).toBe('last');
    expect(Object.getOwnPropertyDescriptor(query, 'constructor')?.value).toBe('y');
    expect(res.text).toContain('"query":{"__proto__":"last","constructor":"y"}');
  });

  it('resolves an archived link, even past its expiry', async () => {
    const past = new Date(Date.now() - 60_000);
    const archived = await seed(alpha, 'live', {
      archived_at: new Date(),
      deep_link_data: { a: 1 },
    });
    const archivedExpired = await seed(alpha, 'live', {
      archived_at: new Date(),
      expires_at: past,
      deep_link_data: { b: 2 },
    });
    for (const [link, data] of [
      [archived, { a: 1 }],
      [archivedExpired, { b: 2 }],
    ] as const) {
      const res = await resolve({ url: urlOf(alpha, 'live', link.alias) });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ link: { id: link.id }, deepLinkData: data });
    }
  });

  it('resolves a link whose expiry is still ahead', async () => {
    const link = await seed(alpha, 'live', { expires_at: new Date(Date.now() + 3_600_000) });
    expect((await resolve({ url: urlOf(alpha, 'live', link.alias) })).status).toBe(200);
  });

  it('answers 410 expired, without data, for an expired link', async () => {
    const link = await seed(alpha, 'live', {
      expires_at: new Date(Date.now() - 1_000),
      deep_link_data: { secret: 'not for expired links' },
    });
    const res = await resolve({ url: `${urlOf(alpha, 'live', link.alias)}?q=1` });
    expect(res.status).toBe(410);
    expect(res.body).toEqual({ error: 'expired', message: 'The link has expired.' });
    expect(res.text).not.toContain('not for expired links');
    expectNoStore(res);
  });

  it('shows a change made through the API on the very next resolve', async () => {
    const link = await seed(alpha, 'live', { deep_link_data: { v: 1 } });
    const url = urlOf(alpha, 'live', link.alias);
    expect((await resolve({ url })).body).toMatchObject({ deepLinkData: { v: 1 } });
    const patched = await gateway.api(`/api/v1/links/${link.id}`, {
      key: alpha.live.secret,
      method: 'PATCH',
      body: { deepLinkData: { v: 2 } },
    });
    expect(patched.status).toBe(200);
    expect((await resolve({ url })).body).toMatchObject({ deepLinkData: { v: 2 } });
  });
});

describe('POST /sdk/resolve: one 404 for every URL the key may not read', () => {
  let mine: LinkRow;
  let mineTest: LinkRow;
  let theirs: LinkRow;
  let baseline: ApiResponse;

  beforeAll(async () => {
    [mine, mineTest, theirs] = await Promise.all([
      seed(alpha, 'live'),
      seed(alpha, 'test'),
      seed(beta, 'live'),
    ]);
    baseline = await resolve({ url: urlOf(alpha, 'live', 'no-such-alias') });
  });

  it('answers an unknown alias with the one not_found body', () => {
    expect(baseline.status).toBe(404);
    expect(baseline.body).toEqual(NOT_FOUND);
    expectNoStore(baseline);
  });

  it.each([
    ["another app's link, on its host", () => urlOf(beta, 'live', theirs.alias)],
    ["another app's alias, on my host", () => urlOf(alpha, 'live', theirs.alias)],
    ['my test link, on the test host (live key)', () => urlOf(alpha, 'test', mineTest.alias)],
    ["my test link's alias, on the live host", () => urlOf(alpha, 'live', mineTest.alias)],
    ['my live link, on the test host', () => urlOf(alpha, 'test', mine.alias)],
    ["my live link, on another app's host", () => urlOf(beta, 'live', mine.alias)],
    ['a foreign host', () => `https://example.com/${mine.alias}`],
    ['a look-alike host', () => `https://${alpha.subdomainKey}.${DOMAIN}.evil.test/${mine.alias}`],
    ['a deeper host', () => `https://a.${alpha.subdomainKey}.${DOMAIN}/${mine.alias}`],
    ['the bare domain', () => `https://${DOMAIN}/${mine.alias}`],
    ['an IP address', () => `https://127.0.0.1/${mine.alias}`],
    ['another scheme', () => `ftp://${hostOf(alpha, 'live')}/${mine.alias}`],
    ['a custom scheme', () => `myapp://${hostOf(alpha, 'live')}/${mine.alias}`],
    ['user info', () => `https://user:pw@${hostOf(alpha, 'live')}/${mine.alias}`],
    ['two path segments', () => `${urlOf(alpha, 'live', mine.alias)}/more`],
    ['a trailing slash', () => `${urlOf(alpha, 'live', mine.alias)}/`],
    ['no alias', () => `https://${hostOf(alpha, 'live')}/`],
    ['an alias that cannot exist', () => urlOf(alpha, 'live', '-bad.alias')],
    ['a relative URL', () => `/${mine.alias}`],
    ['no URL at all', () => 'not a url'],
    ['whitespace', () => '   '],
  ])('%s', async (_case, url) => {
    const { res, statements: ran } = await counted({ url: url() });
    expect({ status: res.status, text: res.text }).toEqual({
      status: baseline.status,
      text: baseline.text,
    });
    expectNoStore(res);
    // The key is still checked, in the one statement.
    expect(ran).toBe(1);
  });

  it("resolves each of those links for its own key and host, so the 404s are the scope's", async () => {
    expect((await resolve({ url: urlOf(alpha, 'live', mine.alias) })).status).toBe(200);
    expect(
      (await resolve({ url: urlOf(alpha, 'test', mineTest.alias) }, alpha.publishable.test.secret))
        .status,
    ).toBe(200);
    expect(
      (await resolve({ url: urlOf(beta, 'live', theirs.alias) }, beta.publishable.live.secret))
        .status,
    ).toBe(200);
  });
});

describe('POST /sdk/resolve: the body', () => {
  it.each([
    ['url is missing', {}, { url: 'is required' }],
    ['url is empty', { url: '' }, { url: 'must not be empty' }],
    ['url is a number', { url: 42 }, { url: 'must be a string' }],
    ['url is null', { url: null }, { url: 'must be a string' }],
    ['url is an array', { url: ['https://x.test/a'] }, { url: 'must be a string' }],
    ['url is an object', { url: { href: 'x' } }, { url: 'must be a string' }],
    [
      'a field is unknown',
      { url: 'https://x.test/a', platform: 'ios' },
      { platform: 'is not a field of this request' },
    ],
    [
      'a field is unknown and url missing',
      { link: 'x' },
      { url: 'is required', link: 'is not a field of this request' },
    ],
  ])('answers 422 when %s', async (_case, body, fields) => {
    const res = await resolve(body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: 'invalid_request',
      message: 'Some fields are invalid.',
      fields,
    });
    expectNoStore(res);
  });

  it('names a field called __proto__ like any unknown field', async () => {
    const res = await gateway.api(RESOLVE, {
      key: alpha.publishable.live.secret,
      headers: { 'content-type': 'application/json' },
      rawBody: '{"url":"https://x.test/a","__proto__":{"admin":true}}',
    });
    expect(res.status).toBe(422);
    expect(res.text).toContain('"fields":{"__proto__":"is not a field of this request"}');
  });

  it.each([
    ['not JSON', 'application/json', '{"url":'],
    ['a JSON array', 'application/json', '["https://x.test/a"]'],
    ['a JSON string', 'application/json', '"https://x.test/a"'],
    ['not sent as JSON', 'text/plain', '{"url":"https://x.test/a"}'],
  ])('answers 400 invalid_body for %s', async (_case, contentType, rawBody) => {
    const res = await gateway.api(RESOLVE, {
      key: alpha.publishable.live.secret,
      headers: { 'content-type': contentType },
      rawBody,
    });
    expect(res.status).toBe(400);
    expect(res.body?.error).toBe('invalid_body');
    expectNoStore(res);
  });

  it.each(['gzip', 'deflate', 'br'])(
    'answers 400 invalid_body for a plain body sent as Content-Encoding %s',
    async (encoding) => {
      const res = await gateway.api(RESOLVE, {
        key: alpha.publishable.live.secret,
        headers: { 'content-type': 'application/json', 'content-encoding': encoding },
        rawBody: '{"url":"https://x.test/a"}',
      });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'invalid_body', message: expect.any(String) });
      expect(res.headers.get('x-request-id')).toEqual(expect.any(String));
      expectNoStore(res);
    },
  );

  it('answers 413 for a body past 2 MiB, and 401 for it with a bad key', async () => {
    const raw = Buffer.from(
      JSON.stringify({ url: `https://x.test/a?${'x'.repeat(MAX_BODY_BYTES)}` }),
    );
    const headers = { 'content-type': 'application/json' };
    const big = await gateway.api(RESOLVE, {
      key: alpha.publishable.live.secret,
      headers,
      rawBody: raw,
    });
    expect(big.status).toBe(413);
    expect(big.body?.error).toBe('payload_too_large');
    expectNoStore(big);
    const refused = await gateway.api(RESOLVE, {
      key: generatePublishableKey('live'),
      headers,
      rawBody: raw,
    });
    expect(refused.status).toBe(401);
  });

  it('answers 400 for no body at all', async () => {
    const res = await gateway.api(RESOLVE, { key: alpha.publishable.live.secret, method: 'POST' });
    expect(res.status).toBe(400);
    expect(res.body?.error).toBe('invalid_body');
  });

  it('answers a bad key with 401 before anything about the body', async () => {
    for (const key of [generatePublishableKey('live'), alpha.live.secret]) {
      for (const request of [
        { body: {} },
        { body: { url: 42, extra: 1 } },
        { rawBody: '{"url":', headers: { 'content-type': 'application/json' } },
        { rawBody: '{}', headers: { 'content-type': 'text/plain' } },
      ]) {
        const res = await gateway.api(RESOLVE, { key, method: 'POST', ...request });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({
          error: 'unauthorised',
          message: 'A valid publishable key is required.',
        });
      }
    }
  });

  it('answers 405 with Allow: POST for other methods', async () => {
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
      const res = await gateway.api(RESOLVE, { key: alpha.publishable.live.secret, method });
      expect({ method, status: res.status, allow: res.headers.get('allow') }).toEqual({
        method,
        status: 405,
        allow: 'POST',
      });
      expectNoStore(res);
    }
  });
});

describe('POST /sdk/resolve: cost and side effects', () => {
  it('checks the key and reads the link in one statement', async () => {
    const link = await seed(alpha, 'live', { deep_link_data: { a: 1 } });
    const url = urlOf(alpha, 'live', link.alias);
    expect(await counted({ url })).toMatchObject({ res: { status: 200 }, statements: 1 });
    expect(await counted({ url: urlOf(alpha, 'live', 'nothing-here') })).toMatchObject({
      res: { status: 404 },
      statements: 1,
    });
    const expired = await seed(alpha, 'live', { expires_at: new Date(Date.now() - 1000) });
    expect(await counted({ url: urlOf(alpha, 'live', expired.alias) })).toMatchObject({
      res: { status: 410 },
      statements: 1,
    });
    // A refused body costs the plain key lookup, one statement too.
    expect(await counted({ url: 7 })).toMatchObject({ res: { status: 422 }, statements: 1 });
    // An unknown key: one statement, with or without a body it could resolve.
    expect(await counted({ url }, generatePublishableKey('live'))).toMatchObject({
      res: { status: 401 },
      statements: 1,
    });
  });

  it('never reaches the database with a malformed key or a secret key', async () => {
    const link = await seed(alpha);
    const url = urlOf(alpha, 'live', link.alias);
    for (const key of [alpha.publishable.live.secret.slice(0, 20), alpha.live.secret]) {
      expect(await counted({ url }, key)).toMatchObject({ res: { status: 401 }, statements: 0 });
    }
  });

  it('counts nothing and stores nothing', async () => {
    const link = await seed(alpha, 'live', { click_count: 7 });
    const tokensBefore = await clickTokenCount(link.id);
    for (let i = 0; i < 5; i++) {
      expect((await resolve({ url: `${urlOf(alpha, 'live', link.alias)}?i=${i}` })).status).toBe(
        200,
      );
    }
    const row = await gateway.deps.db
      .selectFrom('links')
      .innerJoin('link_clicks', 'link_clicks.link_id', 'links.id')
      .select(['link_clicks.click_count', 'links.updated_at'])
      .where('links.id', '=', link.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ click_count: 7, updated_at: link.updated_at });
    expect(await clickTokenCount(link.id)).toBe(tokensBefore);
    expect(tokensBefore).toBe(0);
  });

  it('refuses a revoked publishable key on the very next request', async () => {
    const link = await seed(alpha);
    const key = await createKey(gateway.deps.db, alpha.appId, 'live', 'publishable');
    const url = urlOf(alpha, 'live', link.alias);
    expect((await resolve({ url }, key.secret)).status).toBe(200);
    await revokeKey(gateway.deps.db, key.id);
    const res = await resolve({ url }, key.secret);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      error: 'unauthorised',
      message: 'A valid publishable key is required.',
    });
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expectNoStore(res);
  });
});

/** Click tokens (Redis, see @linkservice/link-cache) stored for `linkId` under the gateway's prefix. */
async function clickTokenCount(linkId: string): Promise<number> {
  const { redis, config } = gateway.deps;
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await redis.scan(
      cursor,
      'MATCH',
      clickTokenPattern(config.REDIS_PREFIX),
      'COUNT',
      1000,
    );
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  const values = keys.length > 0 ? await redis.mget(...keys) : [];
  return values.filter((value) => value !== null && parseClickTokenValue(value)?.linkId === linkId)
    .length;
}
