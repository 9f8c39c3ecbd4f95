import { randomUUID } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { createTenant, eventually, testDatabase } from '@linkservice/testing';
import { scheduleCreationRequestsCleanup } from './creation-requests.cleanup';
import { LinksRepository } from './links.repository';
import { requestRow } from './testing/creation-harness';
import { createLogger } from '@linkservice/logger';

let postgres: DbHandle;
beforeAll(() => {
  postgres = testDatabase(20);
});
afterAll(async () => {
  await postgres.close();
});

async function insertRequest(appId: string, ageHours: number): Promise<string> {
  const id = `crt_${randomUUID()}`;
  await postgres.db
    .insertInto('creation_requests')
    .values({
      id,
      app_id: appId,
      status: 'done',
      results: JSON.stringify({ results: [] }),
      created_at: new Date(Date.now() - ageHours * 3_600_000),
    })
    .execute();
  return id;
}

describe('creation_requests cleanup', () => {
  it('deletes rows past the retention and keeps newer ones', async () => {
    const app = await createTenant(postgres.db);
    const old = await Promise.all([insertRequest(app.appId, 30), insertRequest(app.appId, 25)]);
    const fresh = await insertRequest(app.appId, 23);

    const cleanup = scheduleCreationRequestsCleanup(
      new LinksRepository(postgres.db),
      { retentionHours: 24, intervalMs: 60_000 },
      createLogger('cleanup-test', 'silent'),
    );
    try {
      await eventually(async () => ((await requestRow(postgres.db, old[0])) ? undefined : true), {
        what: 'old rows deleted',
      });
    } finally {
      await cleanup.stop();
    }
    expect(await requestRow(postgres.db, old[1])).toBeUndefined();
    expect(await requestRow(postgres.db, fresh)).toBeDefined();
  });

  it('deletes in bounded slices', async () => {
    const app = await createTenant(postgres.db);
    await Promise.all(Array.from({ length: 5 }, () => insertRequest(app.appId, 48)));
    const repository = new LinksRepository(postgres.db);
    const first = await repository.deleteOldCreationRequests(24, 2);
    expect(first).toBe(2);
  });
});
