import { createHash, randomBytes } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { createLogger } from '@linkservice/logger';
import { createTenant, eventually, insertLink, testDatabase } from '@linkservice/testing';
import { scheduleClickTokensCleanup } from './click-tokens.cleanup';
import { ClickTokensRepository } from './click-tokens.repository';

// The worker's deletion of expired click tokens, against the run's database. Other tests of the
// run may hold expired tokens too; this cleanup deletes theirs as well, as in production, so
// counts here are lower bounds and each test checks its own rows.

let handle: DbHandle;
beforeAll(() => {
  handle = testDatabase(4);
});
afterAll(async () => {
  await handle.close();
});

const MINUTE = 60_000;

/** Inserts tokens of one new link expiring at these offsets from now; returns their hashes. */
async function insertTokens(expiresInMs: number[]): Promise<Buffer[]> {
  const tenant = await createTenant(handle.db);
  const link = await insertLink(handle.db, tenant);
  const rows = expiresInMs.map((offset) => ({
    token_hash: createHash('sha256').update(randomBytes(16)).digest(),
    link_id: link.id,
    app_id: tenant.appId,
    environment: 'live' as const,
    clicked_at: new Date(Date.now() + offset - 60 * MINUTE),
    expires_at: new Date(Date.now() + offset),
  }));
  await handle.db.insertInto('click_tokens').values(rows).execute();
  return rows.map((row) => row.token_hash);
}

/** Slices until one comes back empty: every expired token, this test's and others', is gone. */
async function deleteAllExpired(repository: ClickTokensRepository): Promise<void> {
  while ((await repository.deleteExpired(100)) > 0) {
    // next slice
  }
}

async function remaining(hashes: Buffer[]): Promise<number> {
  const rows = await handle.db
    .selectFrom('click_tokens')
    .select('token_hash')
    .where('token_hash', 'in', hashes)
    .execute();
  return rows.length;
}

describe('click tokens cleanup', () => {
  it('deletes expired tokens in bounded slices and keeps the live ones', async () => {
    const expired = await insertTokens(Array.from({ length: 7 }, (_, i) => -(i + 1) * MINUTE));
    const live = await insertTokens([MINUTE, 30 * MINUTE, 59 * MINUTE]);

    const repository = new ClickTokensRepository(handle.db);
    const slices: { limit: number; deleted: number }[] = [];
    const cleanup = scheduleClickTokensCleanup(
      {
        deleteExpired: async (limit) => {
          const deleted = await repository.deleteExpired(limit);
          slices.push({ limit, deleted });
          return deleted;
        },
      },
      { intervalMs: MINUTE, sliceSize: 2 },
      createLogger('click-tokens-cleanup-test', 'silent'),
    );
    try {
      await eventually(async () => (await remaining(expired)) === 0, {
        what: 'expired tokens deleted',
      });
      // The run goes on until a slice comes back short.
      await eventually(() => slices.at(-1)?.deleted !== 2 && slices.length > 0, {
        what: 'the run ended',
      });
    } finally {
      await cleanup.stop();
    }
    expect(await remaining(live)).toBe(live.length);
    expect(slices.length).toBeGreaterThanOrEqual(4);
    expect(slices.every((slice) => slice.limit === 2 && slice.deleted <= 2)).toBe(true);
    expect(slices.slice(0, -1).every((slice) => slice.deleted === 2)).toBe(true);
  });

  it('deletes no more than the limit per statement, expired rows only', async () => {
    const expired = await insertTokens([-MINUTE, -2 * MINUTE, -3 * MINUTE]);
    const live = await insertTokens([MINUTE]);
    const repository = new ClickTokensRepository(handle.db);

    expect(await repository.deleteExpired(1)).toBe(1);
    await deleteAllExpired(repository);
    expect(await remaining(expired)).toBe(0);
    expect(await remaining(live)).toBe(1);
  });

  it('leaves a token that another transaction holds to a later slice', async () => {
    const [held] = await insertTokens([-MINUTE]);
    const repository = new ClickTokensRepository(handle.db);
    await handle.db.transaction().execute(async (trx) => {
      await trx
        .selectFrom('click_tokens')
        .select('token_hash')
        .where('token_hash', '=', held)
        .forUpdate()
        .execute();
      // Would wait for the lock without SKIP LOCKED (for ever: this transaction waits for it).
      await deleteAllExpired(repository);
      expect(await remaining([held])).toBe(1);
    });
    await deleteAllExpired(repository);
    expect(await remaining([held])).toBe(0);
  });
});
