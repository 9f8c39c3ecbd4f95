import type { ApiResponse, Tenant } from '@linkservice/testing';
import { linkOf, linksOf } from '@linkservice/testing';
import { MAX_BODY_DEPTH } from '../http/json-body';
import { useCreationStack } from './creation.testing';

const kit = useCreationStack();
let tenant: Tenant;

beforeEach(async () => {
  tenant = await kit.newTenant();
});

/**
 * A POST /links body whose deepLinkData holds `levels` nested arrays: the body is nested
 * `levels + 2` deep (the body, deepLinkData, then the arrays). Written out as text, since
 * JSON.stringify recurses as deep as the value.
 */
function linkBodyNesting(levels: number): string {
  const nested = `${'['.repeat(levels)}${']'.repeat(levels)}`;
  return `{"webFallbackUrl":"https://example.com/deep","deepLinkData":{"a":${nested}}}`;
}

function post(
  path: '/api/v1/links' | '/api/v1/links/batch',
  text: string,
  idempotencyKey?: string,
): Promise<ApiResponse> {
  return kit.stack.gateway.api(path, {
    key: tenant.live.secret,
    method: 'POST',
    rawBody: text,
    headers: {
      'content-type': 'application/json',
      ...(idempotencyKey !== undefined && { 'idempotency-key': idempotencyKey }),
    },
  });
}

function expectTooDeep(res: ApiResponse): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status: 400,
    body: {
      error: 'invalid_body',
      message: `The request body nests objects and arrays more than ${MAX_BODY_DEPTH} levels deep.`,
    },
  });
}

async function keyRecords(): Promise<number> {
  const rows = await kit.db
    .selectFrom('idempotency_keys')
    .select('key')
    .where('app_id', '=', tenant.appId)
    .execute();
  return rows.length;
}

describe('a creation body nested deeper than the gateway reads', () => {
  // Valid by every field rule: deepLinkData is an object of about 6,000 characters.
  const deep = linkBodyNesting(3_000);

  it('is a 400 invalid_body with an Idempotency-Key as without, and leaves nothing behind', async () => {
    expect(deep.length).toBeLessThan(8_000);
    // With the key, the key's fingerprint of the body once overflowed the stack: a 500.
    expectTooDeep(await post('/api/v1/links', deep, 'deep-1'));
    expectTooDeep(await post('/api/v1/links', deep));
    expect(await linksOf(kit.db, tenant.appId)).toEqual([]);
    expect(await keyRecords()).toBe(0);
  });

  it('is a 400 in a batch entry too', async () => {
    const batch = `{"links":[${linkBodyNesting(1_000)}]}`;
    expectTooDeep(await post('/api/v1/links/batch', batch, 'deep-batch'));
    expectTooDeep(await post('/api/v1/links/batch', batch));
  });

  it('is a 400 at the size limit, however deep, before any member is looked at', async () => {
    // Nearly 2 MiB of nesting, in a member that is no field at all.
    const levels = 1_000_000;
    const text = `{"nothing":${'['.repeat(levels)}${']'.repeat(levels)}}`;
    expectTooDeep(await post('/api/v1/links', text, 'deep-2'));
    expectTooDeep(await post('/api/v1/links', text));
  });

  it('is a 400 on PATCH as on creation', async () => {
    const created = await post('/api/v1/links', linkBodyNesting(1));
    const res = await kit.stack.gateway.api(`/api/v1/links/${linkOf(created).id}`, {
      key: tenant.live.secret,
      method: 'PATCH',
      rawBody: `{"deepLinkData":{"a":${'['.repeat(3_000)}${']'.repeat(3_000)}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expectTooDeep(res);
  });
});

describe('a creation body nested exactly as deep as the gateway reads', () => {
  const deepest = linkBodyNesting(MAX_BODY_DEPTH - 2);

  it('creates the link, and its Idempotency-Key replays the answer', async () => {
    const first = await post('/api/v1/links', deepest, 'deepest');
    expect(first.status).toBe(201);
    const replay = await post('/api/v1/links', deepest, 'deepest');
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(first.text);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it('stops one level further', async () => {
    expectTooDeep(await post('/api/v1/links', linkBodyNesting(MAX_BODY_DEPTH - 1), 'deeper'));
  });
});
