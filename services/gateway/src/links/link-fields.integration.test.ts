import type { Link } from '@linkservice/contracts';
import { EDITABLE_FIELDS, LINK_FIELD_EXAMPLES } from '@linkservice/contracts';
import type { Tenant } from '@linkservice/testing';
import { createTenant } from '@linkservice/testing';
import type { CreationStack } from './create.testing';
import { startCreationStack } from './create.testing';

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
