import { sql } from 'kysely';
import { LINK_STATUS_CASES } from '@linkservice/contracts';
import type { DbHandle } from '@linkservice/db';
import { testDatabase } from '@linkservice/testing';
import { linkRedirectsSql } from './link-redirects.sql';

let handle: DbHandle;

beforeAll(() => {
  handle = testDatabase(1);
});
afterAll(async () => {
  await handle.close();
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
