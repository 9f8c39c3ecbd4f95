import type { Environment, LinkRow } from '@linkservice/db';
import type { Tenant } from '@linkservice/testing';
import { createTenant, linkOf } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';
import { ARCHIVE_NOTE } from './links.service';
import type { LinkSeed } from '@linkservice/testing';
import { insertLink } from '@linkservice/testing';

const DOMAIN = 'go.example.test';
const NOT_FOUND = { error: 'not_found', message: 'No such link.' };

let gateway: TestGateway;
let alpha: Tenant;
let beta: Tenant;

beforeAll(async () => {
  gateway = await startGateway({ env: { LINK_DOMAIN: DOMAIN } });
  [alpha, beta] = await Promise.all([
    createTenant(gateway.deps.db, { name: 'Alpha' }),
    createTenant(gateway.deps.db, { name: 'Beta' }),
  ]);
});
afterAll(async () => {
  await gateway.stop();
});

function seed(tenant: Tenant, environment: Environment = 'live', values: LinkSeed = {}) {
  return insertLink(gateway.deps.db, { appId: tenant.appId, environment }, values);
}

function keyOf(tenant: Tenant, environment: Environment = 'live'): string {
  return tenant[environment].secret;
}

async function rowOf(id: string): Promise<LinkRow> {
  return gateway.deps.db
    .selectFrom('links')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

function getLink(id: string, key = keyOf(alpha)) {
  return gateway.api(`/api/v1/links/${id}`, { key });
}

function patchLink(id: string, body: unknown, key = keyOf(alpha)) {
  return gateway.api(`/api/v1/links/${id}`, { key, method: 'PATCH', body });
}

function archiveLink(id: string, key = keyOf(alpha)) {
  return gateway.api(`/api/v1/links/${id}`, { key, method: 'DELETE' });
}

const FULL_SEED: LinkSeed = {
  ios_fallback_url: 'https://apps.example.com/ios',
  deep_link_data: { screen: 'promo', nested: { list: [1, 'two', null] } },
  title: 'Spring sale',
  campaign: 'spring',
  channel: 'email',
  feature: 'share',
  tags: ['vip', 'spring'],
  expires_at: '2099-01-02T03:04:05Z',
  click_count: 42,
  created_at: '2030-01-01T10:00:00.123Z',
  updated_at: '2030-01-01T10:00:00.123Z',
};

describe('GET /links/{id}', () => {
  it('returns the whole link with clickCount and status', async () => {
    const row = await seed(alpha, 'live', FULL_SEED);
    const res = await getLink(row.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      link: {
        id: row.id,
        alias: row.alias,
        url: `https://${alpha.subdomainKey}.${DOMAIN}/${row.alias}`,
        environment: 'live',
        webFallbackUrl: 'https://example.com/fallback',
        iosFallbackUrl: 'https://apps.example.com/ios',
        deepLinkData: { screen: 'promo', nested: { list: [1, 'two', null] } },
        title: 'Spring sale',
        campaign: 'spring',
        channel: 'email',
        feature: 'share',
        tags: ['vip', 'spring'],
        expiresAt: '2099-01-02T03:04:05Z',
        archivedAt: null,
        createdAt: '2030-01-01T10:00:00.123Z',
        updatedAt: '2030-01-01T10:00:00.123Z',
        clickCount: 42,
        status: 'active',
      },
    });
  });

  it('sends JSON with its length, and HEAD the same headers without a body', async () => {
    const row = await seed(alpha, 'live', { ...FULL_SEED, title: 'Frühling ✓' });
    const res = await getLink(row.id);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Number(res.headers.get('content-length'))).toBe(Buffer.byteLength(res.text));
    expect(linkOf(res).title).toBe('Frühling ✓');
    expect(res.headers.get('x-request-id')).toBeTruthy();
    expect(res.headers.get('etag')).toBeNull();

    const head = await gateway.api(`/api/v1/links/${row.id}`, {
      key: keyOf(alpha),
      method: 'HEAD',
    });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(head.headers.get('content-length')).toBe(res.headers.get('content-length'));
  });

  it('shows nulls and an empty tag list for unset fields', async () => {
    const row = await seed(alpha);
    const link = linkOf(await getLink(row.id));
    expect(link).toMatchObject({
      iosFallbackUrl: null,
      deepLinkData: null,
      title: null,
      campaign: null,
      channel: null,
      feature: null,
      tags: [],
      expiresAt: null,
      archivedAt: null,
      clickCount: 0,
      status: 'active',
    });
  });

  it('uses the -test host for a test-environment link', async () => {
    const row = await seed(alpha, 'test');
    const link = linkOf(await getLink(row.id, keyOf(alpha, 'test')));
    expect(link.url).toBe(`https://${alpha.subdomainKey}-test.${DOMAIN}/${row.alias}`);
    expect(link.environment).toBe('test');
  });

  it('reports expired and archived links by status', async () => {
    const expired = await seed(alpha, 'live', { expires_at: '2020-01-01T00:00:00Z' });
    expect(linkOf(await getLink(expired.id)).status).toBe('expired');
    const archived = await seed(alpha, 'live', {
      expires_at: '2020-01-01T00:00:00Z',
      archived_at: '2024-05-06T07:08:09.010Z',
    });
    const link = linkOf(await getLink(archived.id));
    expect(link.status).toBe('archived');
    expect(link.archivedAt).toBe('2024-05-06T07:08:09.010Z');
  });

  it("answers 404 for another app's link and for the other environment's, like a missing one", async () => {
    const betaLink = await seed(beta);
    const testLink = await seed(alpha, 'test');
    const liveLink = await seed(alpha, 'live');
    const cases: [string, string][] = [
      [betaLink.id, keyOf(alpha)],
      [betaLink.id, keyOf(alpha, 'test')],
      [testLink.id, keyOf(alpha, 'live')],
      [liveLink.id, keyOf(alpha, 'test')],
      [liveLink.id, keyOf(beta, 'live')],
      ['lnk_01JD0000000000000000000000', keyOf(alpha)],
    ];
    for (const [id, key] of cases) {
      const res = await getLink(id, key);
      expect({ id, status: res.status, body: res.body }).toEqual({
        id,
        status: 404,
        body: NOT_FOUND,
      });
    }
    // The owner still sees them.
    expect((await getLink(betaLink.id, keyOf(beta))).status).toBe(200);
    expect((await getLink(testLink.id, keyOf(alpha, 'test'))).status).toBe(200);
  });

  it('answers 404, not 400, for malformed ids', async () => {
    for (const id of [
      'nope',
      'x'.repeat(300),
      '%00',
      'lnk%00abc',
      "lnk'%20OR%201=1",
      '%E2%82%AC',
    ]) {
      const res = await getLink(id);
      expect({ id, status: res.status, body: res.body }).toEqual({
        id,
        status: 404,
        body: NOT_FOUND,
      });
    }
  });
});

describe('PATCH /links/{id}', () => {
  it('changes the fields sent, keeps the others and returns the whole link', async () => {
    const row = await seed(alpha, 'live', FULL_SEED);
    const res = await patchLink(row.id, {
      title: 'Summer sale',
      channel: null,
      tags: ['summer', 'summer', 'vip'],
      deepLinkData: { screen: 'summer' },
      expiresAt: '2098-06-01T12:00:00.999+02:00',
      webFallbackUrl: 'https://example.com/summer',
      iosFallbackUrl: null,
    });
    expect(res.status).toBe(200);
    expect(linkOf(res)).toMatchObject({
      id: row.id,
      alias: row.alias,
      title: 'Summer sale',
      campaign: 'spring',
      channel: null,
      feature: 'share',
      tags: ['summer', 'vip'],
      deepLinkData: { screen: 'summer' },
      expiresAt: '2098-06-01T10:00:00Z',
      webFallbackUrl: 'https://example.com/summer',
      iosFallbackUrl: null,
      clickCount: 42,
      status: 'active',
      createdAt: '2030-01-01T10:00:00.123Z',
    });
    expect(linkOf(res).updatedAt).not.toBe('2030-01-01T10:00:00.123Z');
    // What GET shows afterwards is exactly what PATCH answered.
    expect((await getLink(row.id)).body).toEqual(res.body);
  });

  it('moves updatedAt only when a value actually changes', async () => {
    const row = await seed(alpha, 'live', FULL_SEED);
    const unchangedBodies: unknown[] = [
      {},
      { alias: row.alias },
      { title: 'Spring sale', campaign: 'spring' },
      { tags: ['vip', 'spring', 'vip'] },
      // Same object, keys in another order: jsonb equality.
      { deepLinkData: { nested: { list: [1, 'two', null] }, screen: 'promo' } },
      // Same instant in another zone, and with a fraction that truncates away.
      { expiresAt: '2099-01-02T05:04:05.500+02:00' },
      {
        webFallbackUrl: 'https://example.com/fallback',
        iosFallbackUrl: 'https://apps.example.com/ios',
      },
    ];
    for (const body of unchangedBodies) {
      const res = await patchLink(row.id, body);
      expect({ body, status: res.status, updatedAt: linkOf(res).updatedAt }).toEqual({
        body,
        status: 200,
        updatedAt: '2030-01-01T10:00:00.123Z',
      });
    }
    expect((await rowOf(row.id)).updated_at.toISOString()).toBe('2030-01-01T10:00:00.123Z');

    // Reordered tags are a change.
    const reordered = await patchLink(row.id, { tags: ['spring', 'vip'] });
    expect(linkOf(reordered).tags).toEqual(['spring', 'vip']);
    expect(linkOf(reordered).updatedAt).not.toBe('2030-01-01T10:00:00.123Z');
  });

  it('treats clearing an empty field as no change, but setting and clearing a value as changes', async () => {
    const OLD = '2031-01-01T00:00:00.000Z';
    const row = await seed(alpha, 'live', { updated_at: OLD });
    const noop = await patchLink(row.id, { title: null, tags: [], deepLinkData: null });
    expect(linkOf(noop).updatedAt).toBe(OLD);

    const set = await patchLink(row.id, { title: 'now set' });
    expect(linkOf(set).updatedAt).not.toBe(OLD);

    await gateway.deps.db
      .updateTable('links')
      .set({ updated_at: OLD })
      .where('id', '=', row.id)
      .execute();
    const unset = await patchLink(row.id, { title: null });
    expect(linkOf(unset).title).toBeNull();
    expect(linkOf(unset).updatedAt).not.toBe(OLD);
  });

  it('can change an expired link and clear its expiry', async () => {
    const row = await seed(alpha, 'live', { expires_at: '2020-01-01T00:00:00Z' });
    const res = await patchLink(row.id, { expiresAt: null });
    expect(res.status).toBe(200);
    expect(linkOf(res)).toMatchObject({ expiresAt: null, status: 'active' });
  });

  it('answers 422 with every failing field and changes nothing', async () => {
    const row = await seed(alpha, 'live', FULL_SEED);
    const res = await patchLink(row.id, {
      title: 'fine',
      webFallbackUrl: null,
      expiresAt: '2020-01-01T00:00:00Z',
      tags: ['ok', ''],
      clickCount: 0,
      colour: 'red',
    });
    expect(res.status).toBe(422);
    expect(res.body?.error).toBe('invalid_request');
    expect(typeof res.body?.message).toBe('string');
    expect(Object.keys(res.body?.fields as object).sort()).toEqual(
      ['webFallbackUrl', 'expiresAt', 'tags', 'clickCount', 'colour'].sort(),
    );
    const after = await rowOf(row.id);
    expect(after.title).toBe('Spring sale');
    expect(after.updated_at.toISOString()).toBe('2030-01-01T10:00:00.123Z');
  });

  it('refuses a different alias with fields.alias, alone or beside valid changes', async () => {
    const row = await seed(alpha, 'live', { alias: 'CaseSensitive', title: 'kept' });
    for (const body of [
      { alias: 'casesensitive' },
      { alias: 'other', title: 'changed?' },
      { alias: null },
      { alias: 7, title: 'changed?' },
    ]) {
      const res = await patchLink(row.id, body);
      expect({ body, status: res.status, fields: res.body?.fields }).toEqual({
        body,
        status: 422,
        fields: { alias: 'cannot be changed after creation' },
      });
    }
    const after = await rowOf(row.id);
    expect(after).toMatchObject({ alias: 'CaseSensitive', title: 'kept' });
  });

  it('answers 404 across apps and environments and leaves the link untouched', async () => {
    const betaLink = await seed(beta, 'live', { title: 'beta' });
    const testLink = await seed(alpha, 'test', { title: 'alpha test' });
    for (const [id, key] of [
      [betaLink.id, keyOf(alpha)],
      [testLink.id, keyOf(alpha, 'live')],
      [testLink.id, keyOf(beta, 'test')],
      ['lnk_01JD0000000000000000000000', keyOf(alpha)],
      ['not-an-id', keyOf(alpha)],
    ] as const) {
      for (const body of [{ title: 'hijacked' }, {}, { title: 5 }]) {
        const res = await patchLink(id, body, key);
        expect({ id, body, status: res.status, res: res.body }).toEqual({
          id,
          body,
          status: 404,
          res: NOT_FOUND,
        });
      }
    }
    expect((await rowOf(betaLink.id)).title).toBe('beta');
    expect((await rowOf(testLink.id)).title).toBe('alpha test');
  });

  it('answers 409 for an archived link, before looking at the body (404 > 409 > 422)', async () => {
    const row = await seed(alpha, 'live', {
      title: 'archived',
      archived_at: '2024-01-01T00:00:00Z',
    });
    for (const body of [{ title: 'changed' }, {}, { title: 5, nope: 1 }, { alias: 'different' }]) {
      const res = await patchLink(row.id, body);
      expect({ body, status: res.status, error: res.body?.error }).toEqual({
        body,
        status: 409,
        error: 'conflict',
      });
      expect(res.body?.fields).toBeUndefined();
    }
    expect((await rowOf(row.id)).title).toBe('archived');
  });

  it('answers 400 for a body that is not a JSON object, before anything else', async () => {
    const row = await seed(alpha);
    for (const body of [[1], 'text', 3, null]) {
      const res = await patchLink(row.id, body);
      expect(res.status).toBe(400);
      expect(res.body?.error).toBe('invalid_body');
    }
  });
});

describe('DELETE /links/{id}', () => {
  it('archives the link and says it keeps resolving and keeps its alias', async () => {
    const row = await seed(alpha, 'live', FULL_SEED);
    const before = Date.now();
    const res = await archiveLink(row.id);
    expect(res.status).toBe(200);
    expect(res.body?.note).toBe(ARCHIVE_NOTE);
    expect(res.body?.note).toMatch(/archived/);
    expect(res.body?.note).toMatch(/keeps resolving/);
    expect(res.body?.note).toMatch(/alias stays taken/);
    expect(linkOf(res)).toMatchObject({
      id: row.id,
      alias: row.alias,
      status: 'archived',
      title: 'Spring sale',
      clickCount: 42,
    });
    const archivedAt = new Date(linkOf(res).archivedAt as string).getTime();
    expect(linkOf(res).archivedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(archivedAt).toBeGreaterThanOrEqual(before - 5_000);
    expect(linkOf(res).updatedAt).toBe(linkOf(res).archivedAt);
    expect(Object.keys(res.body as object).sort()).toEqual(['link', 'note']);

    const read = await getLink(row.id);
    expect(linkOf(read)).toEqual(linkOf(res));
  });

  it('answers 409 when already archived and keeps the first archivedAt', async () => {
    const row = await seed(alpha);
    const first = await archiveLink(row.id);
    expect(first.status).toBe(200);
    const second = await archiveLink(row.id);
    expect(second.status).toBe(409);
    expect(second.body).toEqual({ error: 'conflict', message: 'The link is already archived.' });
    expect(linkOf(await getLink(row.id)).archivedAt).toBe(linkOf(first).archivedAt);
  });

  it('archives exactly once under concurrent requests', async () => {
    const row = await seed(alpha);
    const answers = await Promise.all(Array.from({ length: 8 }, () => archiveLink(row.id)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409, 409, 409, 409, 409]);
  });

  it('lets a PATCH racing an archive either land before it or get 409', async () => {
    const row = await seed(alpha);
    const [patched, archived] = await Promise.all([
      patchLink(row.id, { title: 'racing' }),
      archiveLink(row.id),
    ]);
    expect(archived.status).toBe(200);
    expect([200, 409]).toContain(patched.status);
    const after = await rowOf(row.id);
    expect(after.archived_at).not.toBeNull();
    expect(after.title).toBe(patched.status === 200 ? 'racing' : null);
  });

  it('answers 404 across apps and environments and archives nothing', async () => {
    const betaLink = await seed(beta);
    const testLink = await seed(alpha, 'test');
    for (const [id, key] of [
      [betaLink.id, keyOf(alpha)],
      [testLink.id, keyOf(alpha, 'live')],
      [testLink.id, keyOf(beta, 'test')],
      ['lnk_01JD0000000000000000000000', keyOf(alpha)],
      ['%00', keyOf(alpha)],
    ] as const) {
      const res = await archiveLink(id, key);
      expect({ id, status: res.status, body: res.body }).toEqual({
        id,
        status: 404,
        body: NOT_FOUND,
      });
    }
    expect((await rowOf(betaLink.id)).archived_at).toBeNull();
    expect((await rowOf(testLink.id)).archived_at).toBeNull();
  });
});
