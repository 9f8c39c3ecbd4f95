import type { Tenant } from '@linkservice/testing';
import { creationRequestCount, linkOf, linksOf } from '@linkservice/testing';
import { useCreationStack } from './creation.testing';

const kit = useCreationStack({ env: { LINK_DOMAIN: 'go.example.test' } });
const { newTenant, create } = kit;

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /links', () => {
  let tenant: Tenant;
  beforeEach(async () => {
    tenant = await newTenant();
  });

  it('creates a link with every field and answers 201 { link }', async () => {
    // Given back as sent; tags and expiresAt are normalised.
    const asSent = {
      alias: 'Spring-Sale_1',
      webFallbackUrl: 'https://example.com/spring',
      iosFallbackUrl: 'https://apps.apple.com/app/id1',
      deepLinkData: { screen: 'sale', id: 7 },
      title: 'Spring sale',
      campaign: 'spring',
      channel: 'email',
      feature: 'promo',
    };
    const res = await create(tenant.live.secret, {
      ...asSent,
      tags: ['a', 'b', 'a'],
      expiresAt: '2099-01-01T10:00:00.123+02:00',
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body as object)).toEqual(['link']);
    const link = linkOf(res);
    expect(link).toEqual({
      id: expect.stringMatching(/^lnk_/),
      ...asSent,
      url: `https://${tenant.subdomainKey}.go.example.test/Spring-Sale_1`,
      environment: 'live',
      tags: ['a', 'b'],
      expiresAt: '2099-01-01T08:00:00Z',
      archivedAt: null,
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: link.createdAt,
      clickCount: 0,
      status: 'active',
    });
    expect(await linksOf(kit.db, tenant.appId)).toMatchObject([
      { alias: 'Spring-Sale_1', environment: 'live', archived_at: null },
    ]);
  });

  it('generates a fresh alias when none (or null) is given, on the test host for a test key', async () => {
    const first = await create(tenant.test.secret, { webFallbackUrl: 'https://example.com' });
    const second = await create(tenant.test.secret, {
      alias: null,
      webFallbackUrl: 'https://example.com',
    });
    expect([first.status, second.status]).toEqual([201, 201]);
    for (const link of [linkOf(first), linkOf(second)]) {
      expect(link.alias).toMatch(/^[A-Za-z0-9]{7,}$/);
      expect(link.environment).toBe('test');
      expect(link.url).toBe(`https://${tenant.subdomainKey}-test.go.example.test/${link.alias}`);
      expect(link).toMatchObject({
        iosFallbackUrl: null,
        deepLinkData: null,
        title: null,
        tags: [],
        expiresAt: null,
      });
    }
    expect(linkOf(first).alias).not.toBe(linkOf(second).alias);
  });

  it('answers 422 naming every failing field, and creates nothing', async () => {
    const res = await create(tenant.live.secret, {
      alias: '-bad',
      webFallbackUrl: 'ftp://example.com',
      title: 'x'.repeat(201),
      id: 'lnk_1',
      colour: 'red',
    });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: 'invalid_request',
      message: expect.any(String),
      fields: {
        alias: expect.any(String),
        webFallbackUrl: expect.any(String),
        title: expect.any(String),
        id: expect.any(String),
        colour: expect.any(String),
      },
    });
    expect(await creationRequestCount(kit.db, tenant.appId)).toBe(0);
    expect(await linksOf(kit.db, tenant.appId)).toEqual([]);
  });

  it('requires webFallbackUrl', async () => {
    const res = await create(tenant.live.secret, { title: 'no fallback' });
    expect(res.status).toBe(422);
    expect(res.body?.fields).toEqual({ webFallbackUrl: expect.any(String) });
  });

  it('refuses a reserved alias with fields.alias', async () => {
    const res = await create(tenant.live.secret, {
      alias: 'Admin',
      webFallbackUrl: 'https://example.com',
    });
    expect(res.status).toBe(422);
    expect(res.body?.fields).toEqual({ alias: expect.any(String) });
  });

  it('refuses an alias already in use in the same environment, but not in the other one', async () => {
    const body = { alias: 'taken', webFallbackUrl: 'https://example.com' };
    expect((await create(tenant.live.secret, body)).status).toBe(201);
    const again = await create(tenant.live.secret, body);
    expect(again.status).toBe(422);
    expect(again.body).toEqual({
      error: 'invalid_request',
      message: expect.any(String),
      fields: { alias: expect.any(String) },
    });
    expect((await create(tenant.test.secret, body)).status).toBe(201);
    // Another app's alias space is its own.
    const other = await newTenant();
    expect((await create(other.live.secret, body)).status).toBe(201);
    // Aliases are case-sensitive.
    expect((await create(tenant.live.secret, { ...body, alias: 'Taken' })).status).toBe(201);
  });

  it('refuses the alias of an archived link with fields.alias', async () => {
    const body = { alias: 'old-promo', webFallbackUrl: 'https://example.com' };
    expect((await create(tenant.live.secret, body)).status).toBe(201);
    await kit.archiveAlias(tenant.appId, 'old-promo');
    const res = await create(tenant.live.secret, body);
    expect(res.status).toBe(422);
    expect(res.body?.fields).toEqual({ alias: expect.any(String) });
  });

  it('answers 422 without fields, about the plan, when the link allowance is reached', async () => {
    const small = await newTenant({ linkAllowance: 2 });
    // The allowance counts both environments.
    expect((await create(small.live.secret, { webFallbackUrl: 'https://a.example' })).status).toBe(
      201,
    );
    expect((await create(small.test.secret, { webFallbackUrl: 'https://a.example' })).status).toBe(
      201,
    );
    const res = await create(small.live.secret, { webFallbackUrl: 'https://a.example' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ error: 'invalid_request', message: expect.stringMatching(/plan/) });
    expect(res.headers.get('ratelimit-remaining')).toBe('298');
    expect(await linksOf(kit.db, small.appId)).toHaveLength(2);
  });

  it('creates exactly the allowance when creations race for its last places', async () => {
    const small = await newTenant({ linkAllowance: 3 });
    const responses = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        create(i % 2 ? small.test.secret : small.live.secret, {
          webFallbackUrl: 'https://race.example',
        }),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(3).fill(201), ...Array(9).fill(422)]);
    for (const refused of responses.filter((r) => r.status === 422)) {
      expect(refused.body).not.toHaveProperty('fields');
    }
    expect(await linksOf(kit.db, small.appId)).toHaveLength(3);
  });

  it('carries the RateLimit headers on 201 and 422', async () => {
    const created = await create(tenant.live.secret, { webFallbackUrl: 'https://example.com' });
    expect(created.headers.get('ratelimit-limit')).toBe('300');
    expect(created.headers.get('ratelimit-remaining')).toBe('299');
    const reset = Number(created.headers.get('ratelimit-reset'));
    expect(reset).toBeGreaterThan(3590);
    expect(reset).toBeLessThanOrEqual(3600);

    const invalid = await create(tenant.live.secret, { webFallbackUrl: 'nope' });
    expect(invalid.status).toBe(422);
    // A rejected request uses nothing up.
    expect(invalid.headers.get('ratelimit-remaining')).toBe('299');
    expect(invalid.headers.get('ratelimit-limit')).toBe('300');
    expect(Number(invalid.headers.get('ratelimit-reset'))).toBeLessThanOrEqual(reset);
  });

  it('answers 400 invalid_body for a body that is not a JSON object', async () => {
    for (const rawBody of ['[]', '"text"', '{"a":', 'null']) {
      const res = await kit.stack.gateway.api('/api/v1/links', {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.live.secret}`,
          'content-type': 'application/json',
        },
        rawBody: rawBody,
      });
      expect({ rawBody, status: res.status, error: res.body?.error }).toEqual({
        rawBody,
        status: 400,
        error: 'invalid_body',
      });
    }
  });

  it('ignores any attempt to pick the app or environment from the body', async () => {
    const other = await newTenant();
    const res = await create(tenant.test.secret, {
      webFallbackUrl: 'https://example.com',
      appId: other.appId,
      environment: 'live',
    });
    expect(res.status).toBe(422);
    expect(Object.keys(res.body?.fields as object).sort()).toEqual(['appId', 'environment']);
    expect(await linksOf(kit.db, other.appId)).toEqual([]);
  });
});
