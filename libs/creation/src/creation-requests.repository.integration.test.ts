import { randomUUID } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import { createTenant, testEnvironment } from '@linkservice/testing';
import { CreationRequestsRepository } from './creation-requests.repository';

let postgres: DbHandle;
beforeAll(() => {
  postgres = createDb({ connectionString: testEnvironment().databaseUrl, max: 4 });
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

function requestRow(requestId: string) {
  return postgres.db
    .selectFrom('creation_requests')
    .select('id')
    .where('id', '=', requestId)
    .executeTakeFirst();
}

describe('CreationRequestsRepository.deleteOlderThan', () => {
  it('deletes rows past the retention and keeps newer ones', async () => {
    const { appId } = await createTenant(postgres.db);
    const old = await Promise.all([insertRequest(appId, 30), insertRequest(appId, 25)]);
    const fresh = await insertRequest(appId, 23);

    await new CreationRequestsRepository(postgres.db).deleteOlderThan(24, 100_000);
    expect(await requestRow(old[0])).toBeUndefined();
    expect(await requestRow(old[1])).toBeUndefined();
    expect(await requestRow(fresh)).toBeDefined();
  });

  it('deletes in bounded slices', async () => {
    const { appId } = await createTenant(postgres.db);
    await Promise.all(Array.from({ length: 5 }, () => insertRequest(appId, 48)));
    const repository = new CreationRequestsRepository(postgres.db);
    const first = await repository.deleteOlderThan(24, 2);
    expect(first).toBe(2);
  });
});
