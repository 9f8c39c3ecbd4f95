import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { DbHandle } from '@linkservice/db';
import { createTenant, insertLink, insertLinks, testDatabase } from '@linkservice/testing';
import { clickCount } from '../testing/harness';
import { encodeDimensions } from '../analytics/click-analytics';
import { ClickBatchesRepository } from './click-batches.repository';

let postgres: DbHandle;

beforeAll(() => {
  postgres = testDatabase(4);
});
afterAll(async () => {
  await postgres.close();
});

/** One batch: whether this call applied it. */
const apply = async (id: string, counts: ReadonlyMap<string, number>) =>
  (await new ClickBatchesRepository(postgres.db).apply([{ id, counts }])).has(id);

/**
 * Where a link's row version lives and which transaction wrote it: both stay the same exactly
 * when nothing wrote a new version of the row (a HOT update changes ctid too).
 */
async function rowVersion(linkId: string) {
  const result = await sql<{ ctid: string; xmin: string; updated_at: Date }>`
    SELECT ctid::text AS ctid, xmin::text AS xmin, updated_at FROM links WHERE id = ${linkId}`.execute(
    postgres.db,
  );
  return result.rows[0];
}

describe('ClickBatchesRepository.apply', () => {
  it('applies several batches in one call, each once, summing their clicks per link', async () => {
    const app = await createTenant(postgres.db);
    const [a, b] = await insertLinks(postgres.db, { appId: app.appId, environment: 'test' }, [
      {},
      {},
    ]);
    const done = `test:${randomUUID()}`;
    expect(await apply(done, new Map([[a.id, 100]]))).toBe(true);
    const [first, second] = [`test:${randomUUID()}`, `test:${randomUUID()}`];
    const claimed = await new ClickBatchesRepository(postgres.db).apply([
      {
        id: first,
        counts: new Map([
          [a.id, 1],
          [b.id, 2],
        ]),
      },
      { id: done, counts: new Map([[a.id, 100]]) },
      {
        id: second,
        counts: new Map([
          [a.id, 3],
          ['lnk_missing', 9],
        ]),
      },
    ]);
    expect(claimed).toEqual(new Set([first, second]));
    expect(await clickCount(postgres.db, a.id)).toBe(104);
    expect(await clickCount(postgres.db, b.id)).toBe(2);
  });

  it("applies a previous release's dimension fields (no source) as taps, beside scans (compat)", async () => {
    const app = await createTenant(postgres.db);
    const link = await insertLink(postgres.db, app);
    const hour = Math.floor(Date.now() / 3_600_000);
    const values = {
      country: 'DE',
      platform: 'ios',
      os: 'ios',
      browser: 'safari',
      referrer: 'direct',
      utm_source: 'none',
      utm_medium: 'none',
      utm_campaign: 'none',
    };
    // The previous release's field: the same, without `␟<source>` at its end.
    const scan = encodeDimensions(hour, false, { ...values, source: 'qr' });
    const previous = encodeDimensions(hour, false, { ...values, source: 'link' }).slice(
      0,
      -'\u001flink'.length,
    );
    expect((link.id + previous).split('\u001f')).toHaveLength(11);
    const id = `test:${randomUUID()}`;
    expect(
      await apply(
        id,
        new Map([
          [link.id, 5],
          [link.id + previous, 3],
          [link.id + scan, 2],
        ]),
      ),
    ).toBe(true);
    const rows = await sql<{ table: string; link_id: string; source: string; clicks: number }>`
      SELECT 'hours' AS table, link_id, source, clicks::int FROM click_rollup_hours
      WHERE app_id = ${app.appId}
      UNION ALL
      SELECT 'days', link_id, source, clicks::int FROM click_rollup_days WHERE app_id = ${app.appId}
      ORDER BY 1, 2, 3`.execute(postgres.db);
    expect(rows.rows).toEqual(
      ['hours', 'days'].sort().flatMap((table) =>
        ['', link.id].flatMap((linkId) => [
          { table, link_id: linkId, source: 'link', clicks: 3 },
          { table, link_id: linkId, source: 'qr', clicks: 2 },
        ]),
      ),
    );
  });

  it('adds flush after flush to link_clicks and never writes the links row', async () => {
    const app = await createTenant(postgres.db);
    const [a, b] = await insertLinks(postgres.db, { appId: app.appId, environment: 'test' }, [
      {},
      {},
    ]);
    const before = [await rowVersion(a.id), await rowVersion(b.id)];
    let expectedA = 0;
    let expectedB = 0;
    for (let i = 1; i <= 200; i++) {
      const counts = new Map([[a.id, i]]);
      expectedA += i;
      if (i % 3 === 0) {
        counts.set(b.id, 2);
        expectedB += 2;
      }
      expect(await apply(`test:${randomUUID()}`, counts)).toBe(true);
    }
    expect(await clickCount(postgres.db, a.id)).toBe(expectedA);
    expect(await clickCount(postgres.db, b.id)).toBe(expectedB);
    expect([await rowVersion(a.id), await rowVersion(b.id)]).toEqual(before);
    // The row carries the link's app and environment, which sort=clicks' index is keyed by.
    const stored = await postgres.db
      .selectFrom('link_clicks')
      .selectAll()
      .where('link_id', 'in', [a.id, b.id])
      .orderBy('click_count', 'desc')
      .execute();
    expect(stored).toEqual([
      { link_id: a.id, app_id: app.appId, environment: 'test', click_count: expectedA },
      { link_id: b.id, app_id: app.appId, environment: 'test', click_count: expectedB },
    ]);
  });

  it('applies a batch id once, and counts nothing for ids that are no link', async () => {
    const app = await createTenant(postgres.db);
    const link = await insertLink(postgres.db, app);
    const batchId = `test:${randomUUID()}`;
    const counts = new Map([
      [link.id, 3],
      ['lnk_no_such_link', 5],
    ]);
    expect(await apply(batchId, counts)).toBe(true);
    expect(await apply(batchId, counts)).toBe(false);
    expect(await clickCount(postgres.db, link.id)).toBe(3);
    const orphans = await postgres.db
      .selectFrom('link_clicks')
      .select('link_id')
      .where('link_id', '=', 'lnk_no_such_link')
      .execute();
    expect(orphans).toEqual([]);
  });

  it('runs overlapping batches at once without deadlocks or lost counts', async () => {
    const app = await createTenant(postgres.db);
    const links = await insertLinks(
      postgres.db,
      app,
      Array.from({ length: 12 }, () => ({})),
    );
    // Each batch names the links in another order; half of them are first clicks (inserts).
    const countsOfEach = Array.from({ length: 16 }, (_, i) => {
      const order = i % 2 === 0 ? links : [...links].reverse();
      return new Map(order.map((link) => [link.id, 1 + (i % 3)]));
    });
    const results = await Promise.all(
      countsOfEach.map((counts) => apply(`test:${randomUUID()}`, counts)),
    );
    expect(results.every(Boolean)).toBe(true);
    const expected = countsOfEach.reduce((sum, counts) => sum + [...counts.values()][0], 0);
    for (const link of links) expect(await clickCount(postgres.db, link.id)).toBe(expected);
  });

  it('goes with its link: deleting a link deletes its count', async () => {
    const app = await createTenant(postgres.db);
    const link = await insertLink(postgres.db, app, { click_count: 4 });
    await postgres.db.deleteFrom('links').where('id', '=', link.id).execute();
    const left = await postgres.db
      .selectFrom('link_clicks')
      .select('link_id')
      .where('link_id', '=', link.id)
      .execute();
    expect(left).toEqual([]);
  });
});
