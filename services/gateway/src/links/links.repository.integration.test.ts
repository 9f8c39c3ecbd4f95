import type { CountedLinkRow, DbHandle } from '@linkservice/db';
import { createTenant, testDatabase } from '@linkservice/testing';
import { LINK_STATUSES } from '@linkservice/contracts';
import type { LinkSort, LinkStatusFilter } from './list-params';
import { SORT_NAMES } from './list-params';
import type { LinkListQuery, LinkScope } from './list-query.sql';
import { escapeLike, listStatement } from './list-query.sql';
import { LinksRepository } from './links.repository';
import type { LinkSeed } from '@linkservice/testing';
import { insertLinks } from '@linkservice/testing';

let handle: DbHandle;
let scope: LinkScope;
let rows: CountedLinkRow[];
/** Always collects and sorts the matches. */
let collecting: LinksRepository;
/** Always walks the sort index. */
let walking: LinksRepository;

const STATUSES: (LinkStatusFilter | undefined)[] = [undefined, ...LINK_STATUSES];

beforeAll(async () => {
  handle = testDatabase(2);
  const tenant = await createTenant(handle.db);
  scope = { appId: tenant.appId, environment: 'live' };
  collecting = new LinksRepository(handle.db, { fewMatches: Number.MAX_SAFE_INTEGER });
  walking = new LinksRepository(handle.db, { fewMatches: 0 });

  // 40 links with many ties in every sort key, mixed statuses, tags and searchable text.
  const seeds: LinkSeed[] = Array.from({ length: 40 }, (_, i) => ({
    alias: `${['Promo', 'promo', 'Sale', 'x'][i % 4]}-${String(i).padStart(2, '0')}`,
    created_at: new Date(Date.UTC(2030, 0, 1, 0, 0, Math.floor(i / 3))).toISOString(),
    click_count: [0, 5, 5, 10][i % 4],
    title: i % 5 === 0 ? `Big 50% off ${i}` : null,
    campaign: i % 7 === 0 ? 'spring_launch' : null,
    tags: i % 2 === 0 ? ['even', `t${i % 3}`] : [`t${i % 3}`],
    expires_at: i % 6 === 0 ? '2020-01-01T00:00:00Z' : i % 6 === 1 ? '2099-01-01T00:00:00Z' : null,
    archived_at: i % 8 === 0 ? '2024-01-01T00:00:00Z' : null,
  }));
  rows = await insertLinks(handle.db, scope, seeds);
  // Another app's and the other environment's links never show up.
  const other = await createTenant(handle.db);
  await insertLinks(handle.db, { appId: other.appId, environment: 'live' }, seeds.slice(0, 5));
  await insertLinks(handle.db, { appId: tenant.appId, environment: 'test' }, [{ title: 'Big' }]);
});
afterAll(async () => {
  await handle.close();
});

function query(overrides: Partial<LinkListQuery>): LinkListQuery {
  return {
    search: undefined,
    tag: undefined,
    status: undefined,
    sort: 'newest',
    limit: 200,
    offset: 0,
    ...overrides,
  };
}

async function allIds(repository: LinksRepository, q: Partial<LinkListQuery>, limit: number) {
  const ids: string[] = [];
  let total = 0;
  for (let offset = 0; offset === 0 || offset < total; offset += limit) {
    const page = await repository.list(scope, query({ ...q, limit, offset }));
    total = page.total;
    ids.push(...page.rows.map((row) => row.id));
  }
  return { ids, total };
}

describe('LinksRepository.list', () => {
  it('returns whole rows of the page and the total', async () => {
    const page = await collecting.list(scope, query({ sort: 'oldest', limit: 2 }));
    expect(page.total).toBe(40);
    expect(page.rows).toEqual([rows[0], rows[1]]);
    expect(page.now).toBeInstanceOf(Date);
  });

  describe.each(SORT_NAMES)('sorted by %s', (sort) => {
    it.each(STATUSES)(
      'gives the same pages whichever strategy runs (status %s)',
      async (status) => {
        for (const filters of [
          {},
          { tag: 'even' },
          { search: '50%' },
          { tag: 't1', search: 'o' },
        ]) {
          const q = { sort, status, ...filters };
          const whole = await collecting.list(scope, query(q));
          expect(whole.rows.length).toBe(whole.total);
          for (const limit of [1, 3, 7]) {
            const byCollecting = await allIds(collecting, q, limit);
            const byWalking = await allIds(walking, q, limit);
            expect(byCollecting).toEqual({ ids: whole.rows.map((r) => r.id), total: whole.total });
            expect(byWalking).toEqual(byCollecting);
          }
        }
      },
    );
  });

  it('counts exactly when the matches are one below, at or one above fewMatches', async () => {
    for (const filters of [
      {},
      { search: '50%' },
      { tag: 'even' },
      { status: 'active' as const },
      { tag: 't1', search: 'o' },
    ]) {
      const whole = await collecting.list(scope, query(filters));
      expect(whole.total).toBeGreaterThan(1);
      for (const fewMatches of [whole.total - 1, whole.total, whole.total + 1]) {
        const repository = new LinksRepository(handle.db, { fewMatches });
        for (const limit of [3, 200]) {
          expect({ filters, fewMatches, ...(await allIds(repository, filters, limit)) }).toEqual({
            filters,
            fewMatches,
            ids: whole.rows.map((r) => r.id),
            total: whole.total,
          });
        }
      }
    }
  });

  it('orders by the documented keys with id breaking ties', async () => {
    const byId = (a: CountedLinkRow, b: CountedLinkRow) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    const expected: Record<LinkSort, CountedLinkRow[]> = {
      newest: [...rows].sort(
        (a, b) => b.created_at.getTime() - a.created_at.getTime() || byId(b, a),
      ),
      oldest: [...rows].sort(
        (a, b) => a.created_at.getTime() - b.created_at.getTime() || byId(a, b),
      ),
      alias: [...rows].sort((a, b) => (a.alias < b.alias ? -1 : 1)),
      clicks: [...rows].sort((a, b) => b.click_count - a.click_count || byId(a, b)),
    };
    for (const sort of SORT_NAMES) {
      for (const repository of [collecting, walking]) {
        const page = await repository.list(scope, query({ sort }));
        expect({ sort, ids: page.rows.map((r) => r.id) }).toEqual({
          sort,
          ids: expected[sort].map((r) => r.id),
        });
      }
    }
  });

  it('keeps the unfiltered total per app and environment across separate inserts', async () => {
    const tenant = await createTenant(handle.db);
    const live: LinkScope = { appId: tenant.appId, environment: 'live' };
    const test: LinkScope = { appId: tenant.appId, environment: 'test' };
    expect((await walking.list(live, query({}))).total).toBe(0);
    await insertLinks(handle.db, live, [{}, {}, {}]);
    await insertLinks(handle.db, live, [{}]);
    await insertLinks(handle.db, test, [{}, {}]);
    expect((await walking.list(live, query({}))).total).toBe(4);
    expect((await walking.list(test, query({}))).total).toBe(2);
    // The statuses partition the links: archived and expired are real counts, active alone is
    // the stored total minus them, so it is checked against the rows it lists too.
    const byStatus = await Promise.all(
      (['active', 'expired', 'archived'] as const).map(
        async (status) => (await walking.list(live, query({ status }))).total,
      ),
    );
    expect(byStatus.reduce((a, b) => a + b, 0)).toBe(4);
    const active = await collecting.list(live, query({ status: 'active' }));
    expect(active.rows).toHaveLength(active.total);
  });

  it.each(SORT_NAMES)(
    'reads only the entries an unfiltered page shows, sorted by %s',
    async (sort) => {
      // Told to collect every match (fewMatches unbounded), an unfiltered page still walks the
      // sort's index: no scan of a link table may return more rows than offset + limit.
      const statement = listStatement(scope, query({ sort, offset: 2, limit: 3 }), {
        fewMatches: Number.MAX_SAFE_INTEGER,
        unclicked: false,
      }).compile(handle.db);
      // This app has a few dozen links, and the tables as many as the tests running beside this
      // one left (their statistics as autovacuum last saw them): reading all of them and sorting
      // can be the cheapest plan here, as it never is at scale. Sequential and bitmap scans and
      // sorts priced as at scale, the statement itself must allow a plan that reads the page only.
      const explained = await handle.pool.connect().then(async (client) => {
        try {
          await client.query('BEGIN');
          await client.query(
            'SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off',
          );
          const { rows } = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
            `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`,
            [...statement.parameters],
          );
          return rows;
        } finally {
          await client.query('ROLLBACK');
          client.release();
        }
      });
      const scans = planNodes(explained[0]['QUERY PLAN'][0].Plan).filter((node) =>
        ['links', 'link_clicks'].includes(node['Relation Name'] ?? ''),
      );
      expect(scans.length).toBeGreaterThan(0);
      for (const scan of scans) expect(scan['Actual Rows']).toBeLessThanOrEqual(5);
    },
  );

  it("tests a small app's own links for a search and a tag, never probing their indexes", async () => {
    // At most fewMatches links in the environment: they are read through the app's index and
    // each tested (strpos, = ANY), whatever the planner would estimate for the text's trigrams.
    for (const filters of [{ search: 'promo' }, { tag: 'even' }, { search: 'sale', tag: 't1' }]) {
      const statement = listStatement(scope, query(filters), {
        fewMatches: 1_000,
        unclicked: false,
      }).compile(handle.db);
      const { rows: explained } = await handle.pool.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
        `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.sql}`,
        [...statement.parameters],
      );
      const tests = planNodes(explained[0]['QUERY PLAN'][0].Plan)
        .filter((node) => node['Relation Name'] === 'links' && node['Actual Loops'] > 0)
        .flatMap((node) => [node.Filter, node['Index Cond'], node['Recheck Cond']])
        .filter((condition) => condition !== undefined)
        .join(' ');
      if (filters.search !== undefined) expect(tests).toContain('strpos(');
      if (filters.tag !== undefined) expect(tests).toContain('= ANY (');
      // ~~ is LIKE, answered by the trigram index; @> the tag index's operator.
      expect(tests).not.toMatch(/~~|@>/);
    }
  });

  it('reads nothing past the end but still counts', async () => {
    for (const repository of [collecting, walking]) {
      const page = await repository.list(scope, query({ offset: 40, limit: 5 }));
      expect(page).toMatchObject({ rows: [], total: 40 });
    }
  });
});

/** A node of EXPLAIN's JSON plan: the fields the tests read. */
interface PlanNode {
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Actual Loops': number;
  Filter?: string;
  'Index Cond'?: string;
  'Recheck Cond'?: string;
  Plans?: PlanNode[];
}

function planNodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(planNodes)];
}

describe('escapeLike', () => {
  it.each([
    ['plain', 'plain'],
    ['50%', '50\\%'],
    ['a_b', 'a\\_b'],
    ['back\\slash', 'back\\\\slash'],
    ['%_\\', '\\%\\_\\\\'],
  ])('escapes %p', (input, escaped) => {
    expect(escapeLike(input)).toBe(escaped);
  });
});
