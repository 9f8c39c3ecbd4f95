import type { DbHandle } from '@linkservice/db';
import { newId } from '@linkservice/db';
import type { CreationOutcome } from '@linkservice/creation';
import type { CreationHarness } from './testing/creation-harness';
import { createTenant, linkDraft, linksOf, testDatabase } from '@linkservice/testing';
import { creation, linkCounts, newHarness } from './testing/creation-harness';

/**
 * The app's link counts (apps.live_link_count / test_link_count) are kept by a trigger on links
 * and read by the worker's claim from the row it locks; these tests hold the plan allowance to
 * them under concurrency and for links inserted without the worker.
 */
let postgres: DbHandle;
let harness: CreationHarness;

beforeAll(() => {
  postgres = testDatabase(20);
  harness = newHarness(postgres.db);
  // Every job sleeps while it holds the app's lock, so the jobs of one app queue on that lock:
  // each claim waits, and must still read the links the previous holder committed.
  harness.startWorker({ testDelayMs: 100, concurrency: 6 });
});

afterAll(async () => {
  await harness.close();
  await postgres.close();
});

function completed(outcome: CreationOutcome) {
  if (outcome.kind !== 'completed') throw new Error(`expected completed, got ${outcome.reason}`);
  return outcome.result;
}

function bulkRows(appId: string, environment: 'live' | 'test', count: number) {
  return Array.from({ length: count }, (_, i) => ({
    id: newId('lnk'),
    app_id: appId,
    environment,
    alias: `bulk-${environment}-${i}`,
    web_fallback_url: 'https://example.com/bulk',
  }));
}

describe("an app's link counts", () => {
  it('hold the allowance exact when every claim waits for the app lock', async () => {
    const app = await createTenant(postgres.db, { linkAllowance: 10 });
    const payloads = Array.from({ length: 6 }, (_, i) =>
      creation(
        app,
        Array.from({ length: 3 }, () => linkDraft()),
        { environment: i % 2 === 0 ? 'live' : 'test' },
      ),
    );
    const results = (
      await Promise.all(payloads.map((payload) => harness.submit(payload, 20_000)))
    ).map(completed);

    const created = results.flatMap((result) => result.results.filter((entry) => entry.ok));
    expect(created).toHaveLength(10);
    const stored = await linksOf(postgres.db, app.appId);
    expect(stored).toHaveLength(10);
    expect(await linkCounts(postgres.db, app.appId)).toEqual({
      live: stored.filter((row) => row.environment === 'live').length,
      test: stored.filter((row) => row.environment === 'test').length,
    });
  });

  it('count links inserted without the worker, and the allowance sees them', async () => {
    const app = await createTenant(postgres.db, { linkAllowance: 5 });
    // One statement, as a bulk load (the bench seeder) inserts.
    await postgres.db
      .insertInto('links')
      .values([...bulkRows(app.appId, 'live', 3), ...bulkRows(app.appId, 'test', 1)])
      .execute();
    expect(await linkCounts(postgres.db, app.appId)).toEqual({ live: 3, test: 1 });

    const result = completed(
      await harness.submit(creation(app, [linkDraft(), linkDraft()], { environment: 'test' })),
    );
    expect(result.results.map((entry) => (entry.ok ? 'ok' : entry.error))).toEqual([
      'ok',
      'plan_limit_reached',
    ]);
    expect(await linkCounts(postgres.db, app.appId)).toEqual({ live: 3, test: 2 });
  });

  it('count each app of a statement that inserts links of several apps', async () => {
    const [first, second] = await Promise.all([
      createTenant(postgres.db),
      createTenant(postgres.db),
    ]);
    await postgres.db
      .insertInto('links')
      .values([...bulkRows(first.appId, 'live', 2), ...bulkRows(second.appId, 'test', 3)])
      .execute();
    expect(await linkCounts(postgres.db, first.appId)).toEqual({ live: 2, test: 0 });
    expect(await linkCounts(postgres.db, second.appId)).toEqual({ live: 0, test: 3 });
  });
});
