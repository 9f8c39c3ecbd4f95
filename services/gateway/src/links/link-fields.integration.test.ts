import type { Link } from '@linkservice/contracts';
import { EDITABLE_FIELDS, LINK_FIELD_EXAMPLES } from '@linkservice/contracts';
import type { Tenant } from '@linkservice/testing';
import { createTenant } from '@linkservice/testing';
import type { CreationStack } from '../creation/creation.testing';
import { startCreationStack } from '../creation/creation.testing';

/**
 * Walks the link field table through the API, so that a derivation that misses a field (the
 * draft, the worker's insert, the PATCH's SET, toLink) fails here.
 */
let stack: CreationStack;
let tenant: Tenant;

beforeAll(async () => {
  stack = await startCreationStack();
  tenant = await createTenant(stack.gateway.deps.db);
});
afterAll(async () => {
  await stack.stop();
});

function linkOf(res: { status: number; body: unknown; text: string }, status: number): Link {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text}`);
  return (res.body as { link: Link }).link;
}

const create = async (body: Record<string, unknown>) =>
  linkOf(
    await stack.gateway.api('/api/v1/links', { key: tenant.live.secret, method: 'POST', body }),
    201,
  );

const get = async (id: string) => {
  const res = await stack.gateway.api(`/api/v1/links/${id}`, { key: tenant.live.secret });
  if (res.status !== 200) throw new Error(`GET answered ${res.status}: ${res.text}`);
  return res.text;
};

describe('every field of a link', () => {
  it('created with every field set, answers exactly what a later GET shows', async () => {
    const created = await create({ alias: 'every-field', ...LINK_FIELD_EXAMPLES });
    expect(created).toMatchObject(LINK_FIELD_EXAMPLES);
    // As text: key order too (deepLinkData's example is not in jsonb's key order).
    expect(await get(created.id)).toBe(JSON.stringify({ link: created }));
  });

  it.each(EDITABLE_FIELDS)('%s alone is a PATCH that is stored', async (field) => {
    const original = await create({ webFallbackUrl: 'https://example.com/before' });
    expect(original[field]).not.toEqual(LINK_FIELD_EXAMPLES[field]);

    const patched = linkOf(
      await stack.gateway.api(`/api/v1/links/${original.id}`, {
        key: tenant.live.secret,
        method: 'PATCH',
        body: { [field]: LINK_FIELD_EXAMPLES[field] },
      }),
      200,
    );
    expect(patched).toEqual({
      ...original,
      [field]: LINK_FIELD_EXAMPLES[field],
      updatedAt: patched.updatedAt,
    });
    expect(await get(original.id)).toBe(JSON.stringify({ link: patched }));
  });
});

describe('a deepLinkData member named __proto__', () => {
  // Sent as JSON text: JSON.stringify of an object literal would not write the member at all.
  const DATA = '{"__proto__":{"x":1},"a":1}';
  const key = () => tenant.live.secret;
  const json = { 'content-type': 'application/json' };

  /** Own members, in a fixed order (jsonb stores shorter keys first). */
  function membersOf(data: unknown): [string, unknown][] {
    if (typeof data !== 'object' || data === null)
      throw new Error(`not an object: ${String(data)}`);
    return Object.entries(data).sort(([a], [b]) => (a < b ? -1 : 1));
  }
  const SENT: [string, unknown][] = [
    ['__proto__', { x: 1 }],
    ['a', 1],
  ];

  it('is kept on create, and by a later GET and list', async () => {
    const created = linkOf(
      await stack.gateway.api('/api/v1/links', {
        key: key(),
        rawBody: `{"alias":"proto-single","webFallbackUrl":"https://example.com/","deepLinkData":${DATA}}`,
        headers: json,
      }),
      201,
    );
    expect(membersOf(created.deepLinkData)).toEqual(SENT);
    const read = JSON.parse(await get(created.id)) as { link: Link };
    expect(membersOf(read.link.deepLinkData)).toEqual(SENT);
    const listed = await stack.gateway.api('/api/v1/links?search=proto-single', { key: key() });
    const { links } = listed.body as { links: Link[] };
    expect(links.map((link) => membersOf(link.deepLinkData))).toEqual([SENT]);
  });

  it('is kept on every entry of a batch (201 and 207), and by a later GET', async () => {
    const entry = (alias: string) =>
      `{"alias":"${alias}","webFallbackUrl":"https://example.com/","deepLinkData":${DATA}}`;
    const all = await stack.gateway.api('/api/v1/links/batch', {
      key: key(),
      rawBody: `{"links":[${entry('proto-b1')},${entry('proto-b2')}]}`,
      headers: json,
    });
    expect(all.status).toBe(201);
    const some = await stack.gateway.api('/api/v1/links/batch', {
      key: key(),
      rawBody: `{"links":[${entry('proto-b3')},{"webFallbackUrl":"https://example.com/","__proto__":{}}]}`,
      headers: json,
    });
    expect(some.status).toBe(207);
    const results = [
      ...(all.body as { results: BatchEntry[] }).results,
      ...(some.body as { results: BatchEntry[] }).results,
    ];
    const created = results.flatMap((result) => (result.link ? [result.link] : []));
    expect(created.map((link) => link.alias)).toEqual(['proto-b1', 'proto-b2', 'proto-b3']);
    for (const link of created) {
      expect(membersOf(link.deepLinkData)).toEqual(SENT);
      const read = JSON.parse(await get(link.id)) as { link: Link };
      expect(membersOf(read.link.deepLinkData)).toEqual(SENT);
    }
    // An entry's own unknown member of that name is named, not dropped.
    expect(some.text).toContain('"fieldErrors":{"__proto__":"is not a field of a link"}');
  });

  it('names a batch request member called __proto__ as an unknown field', async () => {
    const res = await stack.gateway.api('/api/v1/links/batch', {
      key: key(),
      rawBody: `{"links":[{"webFallbackUrl":"https://example.com/"}],"__proto__":{"x":1}}`,
      headers: json,
    });
    expect(res.status).toBe(422);
    expect(res.text).toContain('"fields":{"__proto__":"is not a field of a batch request"}');
  });

  it('is kept by a PATCH', async () => {
    const original = await create({ webFallbackUrl: 'https://example.com/' });
    const patched = linkOf(
      await stack.gateway.api(`/api/v1/links/${original.id}`, {
        key: key(),
        method: 'PATCH',
        rawBody: `{"deepLinkData":${DATA}}`,
        headers: json,
      }),
      200,
    );
    expect(membersOf(patched.deepLinkData)).toEqual(SENT);
  });
});

interface BatchEntry {
  index: number;
  ok: boolean;
  link?: Link;
}
