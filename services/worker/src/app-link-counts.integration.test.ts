import { newId } from '@linkservice/db';
import { createTenant, linkDraft, linksOf } from '@linkservice/testing';
import { completed, creation, linkCounts, useCreationHarness } from './testing/creation-harness';

/**
 * The app's link counts (apps.live_link_count / test_link_count) are kept by a trigger on links
 * and read by the worker's claim from the row it locks; these tests hold the plan allowance to
 * them under concurrency and for links inserted without the worker.
 */
// Every job sleeps while it holds the app's lock, so the jobs of one app queue on that lock:
// each claim waits, and must still read the links the previous holder committed.
const kit = useCreationHarness({ testDelayMs: 100, concurrency: 6 });

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
    const app = await createTenant(kit.db, { linkAllowance: 10 });
    const payloads = Array.from({ length: 6 }, (_, i) =>
      creation(
        app,
        Array.from({ length: 3 }, () => linkDraft()),
        { environment: i % 2 === 0 ? 'live' : 'test' },
      ),
    );
    const results = (
      await Promise.all(payloads.map((payload) => kit.harness.submit(payload, 20_000)))
    ).map(completed);

    const created = results.flatMap((result) => result.results.filter((entry) => entry.ok));
    expect(created).toHaveLength(10);
    const stored = await linksOf(kit.db, app.appId);
    expect(stored).toHaveLength(10);
    expect(await linkCounts(kit.db, app.appId)).toEqual({
      live: stored.filter((row) => row.environment === 'live').length,
      test: stored.filter((row) => row.environment === 'test').length,
    });
  });

  it('count links inserted without the worker, and the allowance sees them', async () => {
    const app = await createTenant(kit.db, { linkAllowance: 5 });
    // One statement, as a bulk load (the bench seeder) inserts.
    await kit.db
      .insertInto('links')
      .values([...bulkRows(app.appId, 'live', 3), ...bulkRows(app.appId, 'test', 1)])
      .execute();
    expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 3, test: 1 });

    const result = completed(
      await kit.harness.submit(creation(app, [linkDraft(), linkDraft()], { environment: 'test' })),
    );
    expect(result.results.map((entry) => (entry.ok ? 'ok' : entry.error))).toEqual([
      'ok',
      'plan_limit_reached',
    ]);
    expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 3, test: 2 });
  });

  it('count each app of a statement that inserts links of several apps', async () => {
    const [first, second] = await Promise.all([createTenant(kit.db), createTenant(kit.db)]);
    await kit.db
      .insertInto('links')
      .values([...bulkRows(first.appId, 'live', 2), ...bulkRows(second.appId, 'test', 3)])
      .execute();
    expect(await linkCounts(kit.db, first.appId)).toEqual({ live: 2, test: 0 });
    expect(await linkCounts(kit.db, second.appId)).toEqual({ live: 0, test: 3 });
  });
});
