import type { ApiResponse, Tenant } from '@linkservice/testing';
import { StatementCounter } from '../testing';
import { useCreationStack } from './creation.testing';

/** The gateway's own statements (the creation's settle and the worker's are not on its Kysely). */
const statements = new StatementCounter();
const kit = useCreationStack({ deps: statements.countingDeps });
let tenant: Tenant;

beforeEach(async () => {
  tenant = await kit.newTenant();
});

async function counted(
  body: unknown,
  idempotencyKey?: string,
): Promise<{ res: ApiResponse; statements: number }> {
  statements.count = 0;
  const res = await kit.stack.gateway.api('/api/v1/links', {
    key: tenant.live.secret,
    method: 'POST',
    body,
    headers: idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey },
  });
  return { res, statements: statements.count };
}

describe('Idempotency-Key round trips to Postgres', () => {
  it('costs nothing without the header, one claim and one store with it, one read to replay', async () => {
    const draft = { webFallbackUrl: 'https://example.com/counted' };
    const plain = await counted(draft);
    expect(plain.res.status).toBe(201);
    const base = plain.statements;
    // Without the header: the authentication's key lookup only, as before Idempotency-Key.
    expect(base).toBe(1);

    const first = await counted(draft, 'counted');
    expect(first.res.status).toBe(201);
    expect(first.statements).toBe(base + 2);

    const replay = await counted(draft, 'counted');
    expect(replay.res.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.statements).toBe(base + 1);

    const refused = await counted({ ...draft, title: 'other' }, 'counted');
    expect(refused.res.status).toBe(422);
    expect(refused.statements).toBe(base + 1);

    // A key that is not 1-255 printable ASCII is refused before any key statement.
    const invalid = await counted(draft, 'x'.repeat(256));
    expect(invalid.res.status).toBe(422);
    expect(invalid.statements).toBe(base);
  });
});
