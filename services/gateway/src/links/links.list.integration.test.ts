import type { Environment, LinkRow } from '@linkservice/db';
import type { Tenant } from '@linkservice/testing';
import { createTenant, eventually } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { StatementCounter, startGateway } from '../testing';
import type { LinkSeed } from '@linkservice/testing';
import { insertLinks } from '@linkservice/testing';

let gateway: TestGateway;
const statements = new StatementCounter();

beforeAll(async () => {
  gateway = await startGateway({ deps: statements.countingDeps });
});
afterAll(async () => {
  await gateway.stop();
});

/** A fresh tenant per test: its list holds exactly what the test put there. */
function tenant(): Promise<Tenant> {
  return createTenant(gateway.deps.db);
}

function seed(owner: Tenant, seeds: LinkSeed[], environment: Environment = 'live') {
  return insertLinks(gateway.deps.db, { appId: owner.appId, environment }, seeds);
}

async function list(owner: Tenant, query = '', environment: Environment = 'live') {
  const res = await gateway.api(`/api/v1/links${query}`, { key: owner[environment].secret });
  expect(res.status).toBe(200);
  return res.body as {
    links: { id: string; alias: string; clickCount: number; status: string }[];
    pagination: { page: number; perPage: number; total: number; pageCount: number };
  };
}

async function ids(owner: Tenant, query = ''): Promise<string[]> {
  return (await list(owner, query)).links.map((link) => link.id);
}

function idsOf(rows: LinkRow[]): string[] {
  return rows.map((row) => row.id);
}

/** `n` links created one second apart, oldest first. */
function timeline(n: number, extra: (i: number) => LinkSeed = () => ({})): LinkSeed[] {
  return Array.from({ length: n }, (_, i) => ({
    created_at: new Date(Date.UTC(2030, 0, 1, 0, 0, i)).toISOString(),
    ...extra(i),
  }));
}

/** Every page of a listing, walked with the given perPage. */
async function walk(owner: Tenant, query: string, perPage: number): Promise<string[]> {
  const first = await list(owner, `?${query}&perPage=${perPage}`);
  const all = first.links.map((link) => link.id);
  for (let page = 2; page <= first.pagination.pageCount; page++) {
    const next = await list(owner, `?${query}&perPage=${perPage}&page=${page}`);
    all.push(...next.links.map((link) => link.id));
  }
  return all;
}

describe('GET /links', () => {
  it('lists newest first with clickCount, status and pagination', async () => {
    const owner = await tenant();
    const rows = await seed(
      owner,
      timeline(3, (i) => ({ click_count: i * 10 })),
    );
    const body = await list(owner);
    expect(body.links.map((link) => link.id)).toEqual(idsOf(rows).reverse());
    expect(body.links.map((link) => link.clickCount)).toEqual([20, 10, 0]);
    expect(body.links.every((link) => link.status === 'active')).toBe(true);
    expect(body.pagination).toEqual({ page: 1, perPage: 25, total: 3, pageCount: 1 });
  });

  it('answers an empty list with zero pages', async () => {
    const owner = await tenant();
    expect(await list(owner)).toEqual({
      links: [],
      pagination: { page: 1, perPage: 25, total: 0, pageCount: 0 },
    });
  });

  it("shows only the caller's app and environment", async () => {
    const owner = await tenant();
    const other = await tenant();
    const live = await seed(owner, timeline(2));
    const test = await seed(owner, timeline(3), 'test');
    await seed(other, timeline(4));
    await seed(other, timeline(1), 'test');

    expect((await ids(owner)).sort()).toEqual(idsOf(live).sort());
    const testList = await list(owner, '', 'test');
    expect(testList.links.map((link) => link.id).sort()).toEqual(idsOf(test).sort());
    expect(testList.pagination.total).toBe(3);
    // Filters never widen the scope.
    expect(await ids(owner, '?status=active&search=seed&sort=clicks')).toHaveLength(2);
  });

  describe('pagination', () => {
    let owner: Tenant;
    let newestFirst: string[];

    beforeAll(async () => {
      owner = await tenant();
      newestFirst = idsOf(await seed(owner, timeline(7))).reverse();
    });

    it('pages through without overlap or gaps', async () => {
      const page1 = await list(owner, '?perPage=3');
      expect(page1.pagination).toEqual({ page: 1, perPage: 3, total: 7, pageCount: 3 });
      expect(page1.links.map((l) => l.id)).toEqual(newestFirst.slice(0, 3));
      expect(await ids(owner, '?perPage=3&page=2')).toEqual(newestFirst.slice(3, 6));
      const page3 = await list(owner, '?perPage=3&page=3');
      expect(page3.links.map((l) => l.id)).toEqual(newestFirst.slice(6));
      expect(page3.pagination).toEqual({ page: 3, perPage: 3, total: 7, pageCount: 3 });
    });

    it('answers a page past the end with no links and the true pagination', async () => {
      for (const page of [4, 1000, 9007199254740991]) {
        expect(await list(owner, `?perPage=3&page=${page}`)).toEqual({
          links: [],
          pagination: { page, perPage: 3, total: 7, pageCount: 3 },
        });
      }
    });

    it.each([
      ['beyond safe integers', '99999999999999999999'],
      ['that JSON would print as 1e+30', '1' + '0'.repeat(30)],
      ['beyond any double', '9'.repeat(400)],
    ])('answers a page %s as the last safe integer page, past the end', async (_, digits) => {
      const pageText = `"page":${Number.MAX_SAFE_INTEGER},`;
      for (const perPage of [3, 200]) {
        const res = await gateway.api(`/api/v1/links?perPage=${perPage}&page=${digits}`, {
          key: owner.live.secret,
        });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          links: [],
          pagination: {
            page: Number.MAX_SAFE_INTEGER,
            perPage,
            total: 7,
            pageCount: Math.ceil(7 / perPage),
          },
        });
        // Checked on the text: JSON.parse reads 1e+30 as a number too, an int64 client does not.
        expect(res.text).toContain(pageText);
        expect(res.text).not.toMatch(/\d[eE][+-]?\d/);
      }
      // A filter makes the statement collect and count the matches instead of reading the
      // stored total.
      expect(await list(owner, `?perPage=3&page=${digits}&search=seed`)).toEqual({
        links: [],
        pagination: { page: Number.MAX_SAFE_INTEGER, perPage: 3, total: 7, pageCount: 3 },
      });
    });

    it('fits exactly: perPage equal to total gives one page', async () => {
      expect((await list(owner, '?perPage=7')).pagination.pageCount).toBe(1);
      expect((await list(owner, '?perPage=6')).pagination.pageCount).toBe(2);
      expect((await list(owner, '?perPage=1')).pagination.pageCount).toBe(7);
    });

    it.each([
      ['page=0', 1, 25],
      ['page=-1', 1, 25],
      ['page=2.5', 1, 25],
      ['page=abc', 1, 25],
      ['perPage=0', 1, 25],
      ['perPage=-3', 1, 25],
      ['perPage=2.5', 1, 25],
      ['perPage=lots', 1, 25],
      ['perPage=201', 1, 200],
      ['perPage=100000', 1, 200],
      ['page=2&perPage=200', 2, 200],
    ])('falls back for %s', async (query, page, perPage) => {
      const body = await list(owner, `?${query}`);
      expect(body.pagination).toEqual({
        page,
        perPage,
        total: 7,
        pageCount: Math.ceil(7 / perPage),
      });
      expect(body.links).toHaveLength(page === 1 ? 7 : 0);
    });

    it('caps perPage at 200 with more than 200 links', async () => {
      const many = await tenant();
      await seed(many, timeline(205));
      const body = await list(many, '?perPage=500');
      expect(body.links).toHaveLength(200);
      expect(body.pagination).toEqual({ page: 1, perPage: 200, total: 205, pageCount: 2 });
      expect((await list(many, '?page=2&perPage=500')).links).toHaveLength(5);
      expect((await list(many)).links).toHaveLength(25);
    });
  });

  describe('statements', () => {
    it('answers a page with the key check and one list statement', async () => {
      const owner = await tenant();
      await seed(
        owner,
        timeline(5, (i) => ({ click_count: i + 1, tags: ['t'] })),
      );
      for (const query of ['', '?sort=oldest&tag=t', '?search=x&status=active', '?sort=clicks']) {
        statements.count = 0;
        await list(owner, query);
        expect({ query, statements: statements.count }).toEqual({ query, statements: 2 });
      }
    });

    it('takes one more for a sort=clicks page that reaches the never-clicked links', async () => {
      const owner = await tenant();
      await seed(
        owner,
        timeline(4, (i) => ({ click_count: i < 2 ? 0 : i })),
      );
      statements.count = 0;
      expect((await list(owner, '?sort=clicks')).links).toHaveLength(4);
      expect(statements.count).toBe(3);
    });
  });

  describe('sort', () => {
    it('orders oldest first with ties broken by id', async () => {
      const owner = await tenant();
      const sameSecond = '2030-01-01T00:00:00.000Z';
      const rows = await seed(owner, [
        { created_at: '2029-12-31T00:00:00.000Z' },
        { created_at: sameSecond },
        { created_at: sameSecond },
        { created_at: sameSecond },
        { created_at: '2030-01-02T00:00:00.000Z' },
      ]);
      const tied = idsOf(rows.slice(1, 4)).sort();
      const oldest = [rows[0].id, ...tied, rows[4].id];
      expect(await ids(owner, '?sort=oldest')).toEqual(oldest);
      expect(await ids(owner, '?sort=newest')).toEqual([...oldest].reverse());
      expect(await ids(owner, '?sort=unknown')).toEqual([...oldest].reverse());
    });

    it('orders by alias in code-point order (case-sensitive)', async () => {
      const owner = await tenant();
      const aliases = ['b', 'B', 'a', 'A-1', 'A_1', 'A1', '0z', 'Z', 'aa', 'a-'];
      await seed(
        owner,
        aliases.map((alias) => ({ alias })),
      );
      const sorted = [...aliases].sort(); // JS default sort compares UTF-16 units = code points here
      expect((await list(owner, '?sort=alias')).links.map((l) => l.alias)).toEqual(sorted);
      expect(sorted).toEqual(['0z', 'A-1', 'A1', 'A_1', 'B', 'Z', 'a', 'a-', 'aa', 'b']);
    });

    it('orders by clicks, most first, ties by id ascending', async () => {
      const owner = await tenant();
      const rows = await seed(owner, [
        { click_count: 5 },
        { click_count: 100 },
        { click_count: 5 },
        { click_count: 0 },
        { click_count: 5 },
      ]);
      const fives = idsOf([rows[0], rows[2], rows[4]]).sort();
      expect(await ids(owner, '?sort=clicks')).toEqual([rows[1].id, ...fives, rows[3].id]);
    });

    it.each(['newest', 'oldest', 'clicks', 'alias'])(
      'never overlaps or skips across pages when every sort key ties (%s)',
      async (sort) => {
        const owner = await tenant();
        const rows = await seed(
          owner,
          Array.from({ length: 11 }, () => ({
            created_at: '2030-01-01T00:00:00.000Z',
            click_count: 3,
          })),
        );
        const walked = await walk(owner, `sort=${sort}`, 4);
        expect(walked).toHaveLength(11);
        expect(new Set(walked).size).toBe(11);
        expect([...walked].sort()).toEqual(idsOf(rows).sort());
        expect(await walk(owner, `sort=${sort}`, 4)).toEqual(walked);
      },
    );
  });

  describe('search', () => {
    let owner: Tenant;
    let rows: LinkRow[];

    beforeAll(async () => {
      owner = await tenant();
      rows = await seed(
        owner,
        timeline(
          9,
          (i) =>
            [
              { alias: 'SpringPromo' },
              { alias: 'plain1', title: 'The BIG Spring sale' },
              { alias: 'plain2', campaign: 'spring-2030' },
              { alias: 'plain3', channel: 'newsletter_spring' },
              { alias: 'plain4', feature: 'share-SPRING' },
              { alias: 'plain5', title: '100% off', tags: ['spring'] },
              { alias: 'plain6', title: 'under_score', campaign: 'back\\slash' },
              { alias: 'plain7', title: 'abc', campaign: 'def' },
              { alias: 'plain8', title: 'autumn' },
            ][i],
        ),
      );
    });

    function aliasesFor(query: string) {
      return list(owner, query).then((body) => body.links.map((link) => link.alias).sort());
    }

    it('matches a case-insensitive substring of alias, title, campaign, channel or feature', async () => {
      const spring = ['SpringPromo', 'plain1', 'plain2', 'plain3', 'plain4'];
      expect(await aliasesFor('?search=spring')).toEqual(spring);
      expect(await aliasesFor('?search=SPRING')).toEqual(spring);
      expect(await aliasesFor('?search=sPrInG')).toEqual(spring);
      expect(await aliasesFor('?search=springpromo')).toEqual(['SpringPromo']);
      expect(await aliasesFor('?search=PLAIN')).toHaveLength(8);
      expect((await list(owner, '?search=spring')).pagination.total).toBe(5);
    });

    it('does not search tags (they have their own filter)', async () => {
      expect(await aliasesFor('?search=spring')).not.toContain('plain5');
    });

    it('treats % _ and \\ literally', async () => {
      expect(await aliasesFor(`?search=${encodeURIComponent('%')}`)).toEqual(['plain5']);
      expect(await aliasesFor(`?search=${encodeURIComponent('100%')}`)).toEqual(['plain5']);
      expect(await aliasesFor(`?search=${encodeURIComponent('0%')}`)).toEqual(['plain5']);
      expect(await aliasesFor('?search=_')).toEqual(['plain3', 'plain6']);
      expect(await aliasesFor('?search=r_sc')).toEqual(['plain6']);
      expect(await aliasesFor(`?search=${encodeURIComponent('\\')}`)).toEqual(['plain6']);
      expect(await aliasesFor(`?search=${encodeURIComponent('k\\s')}`)).toEqual(['plain6']);
      // A wildcard would have matched these; literally, nothing has them.
      expect(await aliasesFor(`?search=${encodeURIComponent('p%o')}`)).toEqual([]);
      expect(await aliasesFor('?search=a_c')).toEqual([]);
    });

    it('never matches across two fields', async () => {
      expect(await aliasesFor('?search=abc')).toEqual(['plain7']);
      expect(await aliasesFor('?search=cdef')).toEqual([]);
      expect(await aliasesFor(`?search=${encodeURIComponent('c\u001fd')}`)).toEqual([]);
      const body = await list(owner, `?search=${encodeURIComponent('\u001f')}`);
      expect(body).toEqual({
        links: [],
        pagination: { page: 1, perPage: 25, total: 0, pageCount: 0 },
      });
    });

    it('matches nothing for a NUL rather than failing', async () => {
      expect(await aliasesFor('?search=%00')).toEqual([]);
      expect(await aliasesFor('?tag=%00')).toEqual([]);
    });

    it('treats an empty search as no filter', async () => {
      expect((await list(owner, '?search=')).pagination.total).toBe(rows.length);
    });
  });

  describe('tag, status and their combination', () => {
    let owner: Tenant;

    beforeAll(async () => {
      owner = await tenant();
      await seed(owner, [
        { alias: 'activeVip', tags: ['vip', 'x'], title: 'sale' },
        { alias: 'activeVIP', tags: ['VIP'], title: 'sale' },
        {
          alias: 'expiredVip',
          tags: ['x', 'vip'],
          expires_at: '2020-01-01T00:00:00Z',
          title: 'sale',
        },
        {
          alias: 'archivedVip',
          tags: ['vip'],
          archived_at: '2024-01-01T00:00:00Z',
          expires_at: '2020-01-01T00:00:00Z',
        },
        { alias: 'activeNone', title: 'sale' },
        { alias: 'future', expires_at: '2099-01-01T00:00:00Z', tags: ['vipx'] },
      ]);
    });

    async function aliasesFor(query: string) {
      return (await list(owner, query)).links.map((link) => link.alias).sort();
    }

    it('filters by one tag, exactly and case-sensitively', async () => {
      expect(await aliasesFor('?tag=vip')).toEqual(['activeVip', 'archivedVip', 'expiredVip']);
      expect(await aliasesFor('?tag=VIP')).toEqual(['activeVIP']);
      expect(await aliasesFor('?tag=vi')).toEqual([]);
      expect(await aliasesFor('?tag=vipx')).toEqual(['future']);
      expect(await aliasesFor(`?tag=${encodeURIComponent('"vip"')}`)).toEqual([]);
      expect(await aliasesFor(`?tag=${encodeURIComponent('{vip}')}`)).toEqual([]);
    });

    it('filters by status computed at query time', async () => {
      expect(await aliasesFor('?status=active')).toEqual([
        'activeNone',
        'activeVIP',
        'activeVip',
        'future',
      ]);
      expect(await aliasesFor('?status=expired')).toEqual(['expiredVip']);
      expect(await aliasesFor('?status=archived')).toEqual(['archivedVip']);
      expect(await aliasesFor('?status=bogus')).toHaveLength(6);
      const expired = await list(owner, '?status=expired');
      expect(expired.links[0].status).toBe('expired');
      const archived = await list(owner, '?status=archived');
      expect(archived.links[0].status).toBe('archived');
    });

    it('sees a link expire without any write', async () => {
      const soon = new Date(Date.now() + 1_500).toISOString();
      const [row] = await seed(owner, [{ alias: 'expiresSoon', expires_at: soon }]);
      expect(await aliasesFor('?status=active')).toContain('expiresSoon');
      const expired = await eventually(
        async () => {
          const aliases = (await list(owner, '?status=expired')).links.map((l) => l.alias);
          return aliases.includes('expiresSoon') && aliases;
        },
        { timeoutMs: 10_000, intervalMs: 100, what: 'expiresSoon listed as expired' },
      );
      expect(expired).toContain('expiresSoon');
      expect(await aliasesFor('?status=active')).not.toContain('expiresSoon');
      await gateway.deps.db
        .updateTable('links')
        .set({ archived_at: new Date() })
        .where('id', '=', row.id)
        .execute();
    });

    it('combines filters with AND', async () => {
      expect(await aliasesFor('?tag=vip&status=active')).toEqual(['activeVip']);
      expect(await aliasesFor('?tag=vip&status=expired&search=SALE')).toEqual(['expiredVip']);
      expect(await aliasesFor('?tag=vip&search=sale')).toEqual(['activeVip', 'expiredVip']);
      expect(await aliasesFor('?status=archived&search=sale')).toEqual([]);
      const body = await list(owner, '?tag=vip&perPage=1&page=2&sort=alias');
      expect(body.links.map((l) => l.alias)).toEqual(['archivedVip']);
      expect(body.pagination).toEqual({ page: 2, perPage: 1, total: 3, pageCount: 3 });
    });
  });
});
