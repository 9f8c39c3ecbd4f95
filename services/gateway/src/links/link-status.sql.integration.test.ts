import { expressionBuilder, sql } from 'kysely';
import { LINK_STATUS_CASES, LINK_STATUSES } from '@linkservice/contracts';
import type { Database, DbHandle } from '@linkservice/db';
import { testDatabase } from '@linkservice/testing';
import { linkRedirectsSql } from '../sdk/link-redirects.sql';
import { linkStatusIs } from './list-query.sql';

let handle: DbHandle;

beforeAll(() => {
  handle = testDatabase(1);
});
afterAll(async () => {
  await handle.close();
});

describe('LINK_STATUS_CASES against linkStatusIs (the SQL copy, evaluated by Postgres)', () => {
  it.each(LINK_STATUS_CASES)('$name: $status', async (c) => {
    const eb = expressionBuilder<Database, 'links'>();
    const now = sql<Date>`cast(${c.now} as timestamptz)`;
    const result = await sql<Partial<Record<string, boolean>>>`
      SELECT ${sql.join(
        LINK_STATUSES.map((status) => sql`${linkStatusIs(eb, status, now)} AS ${sql.ref(status)}`),
      )}
      FROM (VALUES (cast(${c.archivedAt} as timestamptz), cast(${c.expiresAt} as timestamptz)))
        AS links (archived_at, expires_at)`.execute(handle.db);
    const row = result.rows[0] ?? {};
    // Exactly one status holds, the case's.
    expect(LINK_STATUSES.filter((status) => row[status])).toEqual([c.status]);
  });
});

describe('LINK_STATUS_CASES against linkRedirectsSql (the install match, evaluated by Postgres)', () => {
  it.each(LINK_STATUS_CASES)('$name: redirects $redirects', async (c) => {
    const result = await sql<{ redirects: boolean }>`
      SELECT ${sql.raw(linkRedirectsSql('m', 'm.now'))} AS redirects
      FROM (VALUES (cast(${c.archivedAt} as timestamptz), cast(${c.expiresAt} as timestamptz),
                    cast(${c.now} as timestamptz)))
        AS m (archived_at, expires_at, now)`.execute(handle.db);
    expect(result.rows[0]?.redirects).toBe(c.redirects);
  });
});
