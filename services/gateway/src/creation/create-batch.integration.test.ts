import { ALIAS_REPEATED } from '@linkservice/creation';
import type { Tenant } from '@linkservice/testing';
import { aliasesOf, batchBody, creationRequestCount } from '@linkservice/testing';
import { useCreationStack } from './creation.testing';

const kit = useCreationStack({ env: { LINK_DOMAIN: 'go.example.test' } });
const { newTenant, postBatch, createBatch } = kit;
const valid = (extra: Record<string, unknown> = {}) => ({
  webFallbackUrl: 'https://example.com',
  ...extra,
});

describe('POST /links/batch', () => {
  let tenant: Tenant;
  beforeEach(async () => {
    tenant = await newTenant();
  });

  it('creates every entry and answers 201 with full Link objects in request order', async () => {
    const res = await createBatch(tenant.test.secret, [
      valid({ alias: 'first', title: 'One', tags: ['x', 'x', 'y'] }),
      valid(),
      valid({ alias: 'third', deepLinkData: { a: 1 } }),
    ]);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      created: 3,
      failed: 0,
      notAttempted: 0,
      results: [
        { index: 0, ok: true, link: expect.objectContaining({ alias: 'first', tags: ['x', 'y'] }) },
        { index: 1, ok: true, link: expect.objectContaining({ environment: 'test' }) },
        { index: 2, ok: true, link: expect.objectContaining({ deepLinkData: { a: 1 } }) },
      ],
    });
    for (const { link } of batchBody(res).results) {
      expect(link).toMatchObject({
        id: expect.stringMatching(/^lnk_/),
        url: `https://${tenant.subdomainKey}-test.go.example.test/${link?.alias}`,
        clickCount: 0,
        status: 'active',
        archivedAt: null,
      });
    }
    expect(res.headers.get('ratelimit-remaining')).toBe('297');
    expect(res.headers.get('retry-after')).toBeNull();
  });

  it('accepts 100 entries', async () => {
    const res = await createBatch(
      tenant.live.secret,
      Array.from({ length: 100 }, () => valid()),
    );
    expect(res.status).toBe(201);
    expect(batchBody(res).created).toBe(100);
    expect(batchBody(res).results.map((r) => r.index)).toEqual(
      Array.from({ length: 100 }, (_, i) => i),
    );
    expect(new Set(await aliasesOf(kit.stack.gateway.deps.db, tenant.appId)).size).toBe(100);
  });

  it('creates the valid entries and reports each invalid one by index (207)', async () => {
    const res = await createBatch(tenant.live.secret, [
      valid({ alias: 'ok-0' }),
      { alias: 'api', webFallbackUrl: 'javascript:alert(1)', clickCount: 3 },
      valid({ alias: 'ok-2' }),
      { title: 'missing fallback' },
      valid({ alias: 'ok-4' }),
    ]);
    expect(res.status).toBe(207);
    expect(res.body).toEqual({
      created: 3,
      failed: 2,
      notAttempted: 0,
      results: [
        { index: 0, ok: true, link: expect.objectContaining({ alias: 'ok-0' }) },
        {
          index: 1,
          ok: false,
          error: 'validation_failed',
          message: expect.any(String),
          fieldErrors: {
            alias: expect.any(String),
            webFallbackUrl: expect.any(String),
            clickCount: expect.any(String),
          },
        },
        { index: 2, ok: true, link: expect.objectContaining({ alias: 'ok-2' }) },
        {
          index: 3,
          ok: false,
          error: 'validation_failed',
          message: expect.any(String),
          fieldErrors: { webFallbackUrl: expect.any(String) },
        },
        { index: 4, ok: true, link: expect.objectContaining({ alias: 'ok-4' }) },
      ],
    });
    expect(res.headers.get('ratelimit-remaining')).toBe('297');
    expect(await aliasesOf(kit.stack.gateway.deps.db, tenant.appId)).toEqual([
      'ok-0',
      'ok-2',
      'ok-4',
    ]);
  });

  it('refuses the later of two entries with the same alias, and an alias already taken or archived', async () => {
    await createBatch(tenant.live.secret, [valid({ alias: 'taken' }), valid({ alias: 'gone' })]);
    await kit.archiveAlias(tenant.appId, 'gone');

    const res = await createBatch(tenant.live.secret, [
      valid({ alias: 'twin' }),
      valid({ alias: 'twin' }),
      valid({ alias: 'taken' }),
      valid({ alias: 'gone' }),
      valid({ alias: 'Twin' }),
    ]);
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ created: 2, failed: 3, notAttempted: 0 });
    const outcome = batchBody(res).results.map((r) =>
      r.ok ? 'created' : Object.keys(r.fieldErrors ?? {}).join(','),
    );
    expect(outcome).toEqual(['created', 'alias', 'alias', 'alias', 'created']);
    expect(batchBody(res).results[1].error).toBe('validation_failed');
    expect(res.headers.get('ratelimit-remaining')).toBe('296');
    expect(await aliasesOf(kit.stack.gateway.deps.db, tenant.appId)).toEqual([
      'Twin',
      'gone',
      'taken',
      'twin',
    ]);
  });

  it('refuses an alias repeated from an earlier entry that failed on another field', async () => {
    const res = await createBatch(tenant.live.secret, [
      { alias: 'dup', webFallbackUrl: 'ftp://x' },
      { alias: 'dup', webFallbackUrl: 'https://a.example' },
      { alias: 'kept', webFallbackUrl: 'ftp://x' },
      valid({ alias: 'kept', title: 7 }),
      valid({ alias: 'other' }),
    ]);
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ created: 1, failed: 4, notAttempted: 0 });
    const { results } = batchBody(res);
    expect(results[0].fieldErrors).toEqual({ webFallbackUrl: expect.any(String) });
    expect(results[1]).toEqual({
      index: 1,
      ok: false,
      error: 'validation_failed',
      message: expect.any(String),
      fieldErrors: { alias: ALIAS_REPEATED },
    });
    expect(results[3].fieldErrors).toEqual({ title: expect.any(String), alias: ALIAS_REPEATED });
    expect(results[4]).toMatchObject({ ok: true, link: { alias: 'other' } });
    expect(res.headers.get('ratelimit-remaining')).toBe('299');
    expect(await aliasesOf(kit.stack.gateway.deps.db, tenant.appId)).toEqual(['other']);
  });

  it('creates nothing and sends no job when the only valid entry repeats an invalid one', async () => {
    const res = await createBatch(tenant.live.secret, [
      { alias: 'dup', webFallbackUrl: 'ftp://x' },
      { alias: 'dup', webFallbackUrl: 'https://a.example' },
    ]);
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ created: 0, failed: 2, notAttempted: 0 });
    expect(batchBody(res).results[1].fieldErrors).toEqual({ alias: ALIAS_REPEATED });
    expect(await aliasesOf(kit.stack.gateway.deps.db, tenant.appId)).toEqual([]);
    expect(await creationRequestCount(kit.stack.gateway.deps.db, tenant.appId)).toBe(0);
  });

  it('is safe to resend for entries with caller aliases only', async () => {
    const batch = [valid({ alias: 'r-1' }), valid({ alias: 'r-2' }), valid()];
    const first = await createBatch(tenant.live.secret, batch);
    expect(first.status).toBe(201);

    const again = await createBatch(tenant.live.secret, batch);
    expect(again.status).toBe(207);
    expect(again.body).toMatchObject({ created: 1, failed: 2, notAttempted: 0 });
    expect(batchBody(again).results[0]).toMatchObject({ ok: false, error: 'validation_failed' });
    expect(batchBody(again).results[0].fieldErrors).toHaveProperty('alias');
    expect(batchBody(again).results[1].fieldErrors).toHaveProperty('alias');
    // The entry without an alias got a fresh generated alias: a second link.
    expect(batchBody(again).results[2].ok).toBe(true);
    expect(batchBody(again).results[2].link?.alias).not.toBe(
      batchBody(first).results[2].link?.alias,
    );

    const aliases = await aliasesOf(kit.stack.gateway.deps.db, tenant.appId);
    expect(aliases).toHaveLength(4);
    expect(aliases.filter((a) => a === 'r-1' || a === 'r-2')).toEqual(['r-1', 'r-2']);
  });

  it('answers 207 with created 0 when every entry fails', async () => {
    await createBatch(tenant.live.secret, [valid({ alias: 'dup' })]);
    const res = await createBatch(tenant.live.secret, [valid({ alias: 'dup' })]);
    expect(res.status).toBe(207);
    expect(res.body).toMatchObject({ created: 0, failed: 1, notAttempted: 0 });
    expect(res.body).not.toHaveProperty('stoppedEarly');
    expect(res.headers.get('ratelimit-remaining')).toBe('299');
  });

  it('creates exactly the plan allowance when batches race for it', async () => {
    const capped = await newTenant({ linkAllowance: 10 });
    const responses = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        createBatch(i % 2 ? capped.live.secret : capped.test.secret, [
          valid(),
          valid(),
          valid(),
          { webFallbackUrl: 'bad' },
        ]),
      ),
    );
    let created = 0;
    for (const res of responses) {
      const body = batchBody(res);
      created += body.created;
      expect(body.created + body.failed + body.notAttempted).toBe(4);
      if (body.stoppedEarly) {
        expect(res.status).toBe(207);
        expect(body.stoppedEarly).toMatchObject({ reason: 'plan_limit_reached' });
        const { atIndex } = body.stoppedEarly;
        expect(body.results.at(-1)).toMatchObject({ index: atIndex, error: 'plan_limit_reached' });
        // Entries after the stop, the invalid one included, were never tried.
        expect(body.notAttempted).toBe(4 - atIndex - 1);
      } else {
        expect(body).toMatchObject({ created: 3, failed: 1, notAttempted: 0 });
      }
    }
    expect(created).toBe(10);
    expect(await aliasesOf(kit.stack.gateway.deps.db, capped.appId)).toHaveLength(10);
    expect((await kit.stack.gateway.deps.creationLimiter.state(capped.appId)).remaining).toBe(290);
  });

  describe('request-level errors: 422 invalid_request, nothing created, no job', () => {
    const cases: [string, unknown, Record<string, unknown>][] = [
      ['links missing', {}, { links: expect.any(String) }],
      ['links not an array', { links: { 0: valid() } }, { links: expect.any(String) }],
      ['links null', { links: null }, { links: expect.any(String) }],
      ['links empty', { links: [] }, { links: expect.any(String) }],
      [
        'more than 100 entries',
        { links: Array.from({ length: 101 }, () => valid()) },
        { links: expect.stringContaining('101') },
      ],
      [
        'an entry that is not an object',
        { links: [valid(), 'https://example.com', valid(), [valid()], null] },
        { links: expect.stringContaining('1, 3, 4') },
      ],
      [
        'an unknown top-level field',
        { links: [valid()], dryRun: true },
        { dryRun: expect.any(String) },
      ],
      [
        'an unknown field and a bad links',
        { link: [valid()] },
        { link: expect.any(String), links: expect.any(String) },
      ],
    ];

    it.each(cases)('%s', async (_case, body, fields) => {
      const res = await postBatch(tenant.live.secret, body);
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ error: 'invalid_request', message: expect.any(String), fields });
      expect(res.headers.get('ratelimit-limit')).toBe('300');
      expect(res.headers.get('ratelimit-remaining')).toBe('300');
      expect(await creationRequestCount(kit.stack.gateway.deps.db, tenant.appId)).toBe(0);
      expect(await aliasesOf(kit.stack.gateway.deps.db, tenant.appId)).toEqual([]);
    });
  });

  it('answers 400 invalid_body when the body is not a JSON object', async () => {
    const res = await kit.stack.gateway.api('/api/v1/links/batch', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tenant.live.secret}`,
        'content-type': 'application/json',
      },
      rawBody: JSON.stringify([valid()]),
    });
    expect(res.status).toBe(400);
    expect(res.body?.error).toBe('invalid_body');
  });

  it('answers 405 with Allow: POST for other methods, and is not mistaken for a link id', async () => {
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const res = await kit.stack.gateway.api('/api/v1/links/batch', {
        method,
        headers: { authorization: `Bearer ${tenant.live.secret}` },
      });
      expect({ method, status: res.status, allow: res.headers.get('allow') }).toEqual({
        method,
        status: 405,
        allow: 'POST',
      });
      expect(res.body?.error).toBe('method_not_allowed');
    }
  });
});
