import type { AnalyticsRange, AnalyticsScope, LinkCounts } from './analytics.repository';
import type { TopLinksReader } from './top-links';
import { monthsOf, topLinksOfApp } from './top-links';

interface DayRow {
  linkId: string;
  day: string;
  clicks: number;
  botClicks?: number;
}

/**
 * link_click_days and link_click_months in memory, with the orders of the SQL
 * (analytics.repository.ts), and every call the planner makes.
 */
class MemoryReader implements TopLinksReader {
  readonly monthTopCounts: number[] = [];
  readonly totalsCalls: { limit?: number; candidates?: number }[] = [];

  constructor(private readonly rows: readonly DayRow[]) {}

  monthTop(_scope: AnalyticsScope, month: string, count: number) {
    this.monthTopCounts.push(count);
    const byLink = new Map<string, number>();
    for (const row of this.rows)
      if (row.day.slice(0, 7) === month.slice(0, 7))
        byLink.set(row.linkId, (byLink.get(row.linkId) ?? 0) + row.clicks);
    return Promise.resolve(
      [...byLink]
        .map(([linkId, clicks]) => ({ linkId, clicks }))
        .sort((a, b) => b.clicks - a.clicks || compare(a.linkId, b.linkId))
        .slice(0, count),
    );
  }

  linkTotals(
    _scope: AnalyticsScope,
    range: AnalyticsRange,
    _filters: object,
    options: { limit?: number; candidates?: readonly string[] },
  ) {
    this.totalsCalls.push({ limit: options.limit, candidates: options.candidates?.length });
    const among = options.candidates && new Set(options.candidates);
    const totals = new Map<string, LinkCounts>();
    for (const row of this.rows) {
      if (row.day < range.first || row.day >= range.end) continue;
      if (among && !among.has(row.linkId)) continue;
      const link = totals.get(row.linkId) ?? { linkId: row.linkId, clicks: 0, botClicks: 0 };
      link.clicks += row.clicks;
      link.botClicks += row.botClicks ?? 0;
      totals.set(row.linkId, link);
    }
    const sorted = [...totals.values()]
      .filter((link) => link.clicks + link.botClicks > 0)
      .sort(
        (a, b) => b.clicks - a.clicks || b.botClicks - a.botClicks || compare(a.linkId, b.linkId),
      );
    return Promise.resolve(options.limit === undefined ? sorted : sorted.slice(0, options.limit));
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const SCOPE: AnalyticsScope = { appId: 'app', environment: 'live', links: { kind: 'app' } };
const OCT_NOV: AnalyticsRange = { grain: 'day', first: '2026-10-01', end: '2026-12-01' };

/**
 * 101 links with 20 clicks in October only, 101 with 20 in November only, and `steady` with 15
 * in each: 30 in all, the top link, yet outside both months' top 100 (t = 20 each, bound 40).
 */
function hiddenLeader(): DayRow[] {
  const rows: DayRow[] = [];
  for (let n = 0; n < 101; n++) {
    rows.push({ linkId: `oct${String(n).padStart(3, '0')}`, day: '2026-10-05', clicks: 20 });
    rows.push({ linkId: `nov${String(n).padStart(3, '0')}`, day: '2026-11-05', clicks: 20 });
  }
  rows.push({ linkId: 'steady', day: '2026-10-10', clicks: 15 });
  rows.push({ linkId: 'steady', day: '2026-11-10', clicks: 15 });
  return rows;
}

async function plainSum(rows: readonly DayRow[], range: AnalyticsRange, limit: number) {
  return new MemoryReader(rows).linkTotals(SCOPE, range, {}, { limit });
}

describe('topLinksOfApp', () => {
  it('answers in one round when every month has fewer links than K', async () => {
    const rows = [
      { linkId: 'a', day: '2026-10-02', clicks: 1 },
      { linkId: 'b', day: '2026-10-03', clicks: 5, botClicks: 2 },
      { linkId: 'c', day: '2026-11-03', clicks: 5 },
      { linkId: 'd', day: '2026-11-03', clicks: 0, botClicks: 9 },
    ];
    const reader = new MemoryReader(rows);
    const top = await topLinksOfApp(reader, SCOPE, OCT_NOV, 3);
    expect(top).toEqual(await plainSum(rows, OCT_NOV, 3));
    expect(top.map((link) => link.linkId)).toEqual(['b', 'c', 'a']);
    expect(reader.monthTopCounts).toEqual([100, 100]);
    expect(reader.totalsCalls).toEqual([{ limit: undefined, candidates: 4 }]);
  });

  it('answers in one round when the limit-th exact total beats the bound', async () => {
    // 300 links with 1 click a month, one with 500 in October: t = 1 + 1, the leader has 501.
    const rows: DayRow[] = [];
    for (let n = 0; n < 300; n++)
      for (const day of ['2026-10-01', '2026-11-01'])
        rows.push({ linkId: `l${String(n).padStart(3, '0')}`, day, clicks: 1 });
    rows.push({ linkId: 'big', day: '2026-10-20', clicks: 500 });
    const reader = new MemoryReader(rows);
    expect(await topLinksOfApp(reader, SCOPE, OCT_NOV, 1)).toEqual([
      { linkId: 'big', clicks: 500, botClicks: 0 },
    ]);
    expect(reader.monthTopCounts).toEqual([100, 100]);
  });

  it('widens K tenfold when the first round cannot prove its answer', async () => {
    const rows = hiddenLeader();
    const reader = new MemoryReader(rows);
    const top = await topLinksOfApp(reader, SCOPE, OCT_NOV, 3);
    expect(top[0]).toEqual({ linkId: 'steady', clicks: 30, botClicks: 0 });
    expect(top).toEqual(await plainSum(rows, OCT_NOV, 3));
    // Round 1: steady is no candidate, the best candidate (20) is not above 20 + 20.
    expect(reader.monthTopCounts).toEqual([100, 100, 1000, 1000]);
    expect(reader.totalsCalls.map((call) => call.limit)).toEqual([undefined, undefined]);
  });

  it('falls back to the plain sum once K reaches the maximum', async () => {
    const rows = hiddenLeader();
    const reader = new MemoryReader(rows);
    const top = await topLinksOfApp(reader, SCOPE, OCT_NOV, 2, { first: 100, max: 1000 });
    expect(top).toEqual(await plainSum(rows, OCT_NOV, 2));
    expect(top[0].linkId).toBe('steady');
    expect(reader.monthTopCounts).toEqual([100, 100]);
    expect(reader.totalsCalls).toEqual([
      { limit: undefined, candidates: 200 },
      { limit: 2, candidates: undefined },
    ]);
  });

  it('does not accept a limit-th total equal to the bound (a hidden link may tie it)', async () => {
    // 'a' (30 + 10) is a candidate, 40 in all; 'z' (20 + 20, and a bot click) is cut from both
    // months' top 100 by ties broken by id (t = 20 each): round 1's best equals the bound, and
    // z wins the tie on bot clicks.
    const rows: DayRow[] = [
      { linkId: 'a', day: '2026-10-01', clicks: 30 },
      { linkId: 'a', day: '2026-11-01', clicks: 10 },
      { linkId: 'z', day: '2026-10-01', clicks: 20, botClicks: 1 },
      { linkId: 'z', day: '2026-11-01', clicks: 20 },
    ];
    for (let n = 0; n < 100; n++) {
      rows.push({ linkId: `b${String(n).padStart(3, '0')}`, day: '2026-10-02', clicks: 20 });
      rows.push({ linkId: `c${String(n).padStart(3, '0')}`, day: '2026-11-02', clicks: 20 });
    }
    const reader = new MemoryReader(rows);
    const top = await topLinksOfApp(reader, SCOPE, OCT_NOV, 1);
    expect(top).toEqual([{ linkId: 'z', clicks: 40, botClicks: 1 }]);
    expect(top).toEqual(await plainSum(rows, OCT_NOV, 1));
    expect(reader.monthTopCounts).toEqual([100, 100, 1000, 1000]);
  });

  it('bounds only the months of the range, and counts only its days', async () => {
    // November is outside the range: its leaders are no bound, its clicks no total.
    const rows = hiddenLeader();
    const october: AnalyticsRange = { grain: 'day', first: '2026-10-01', end: '2026-11-01' };
    const reader = new MemoryReader(rows);
    const top = await topLinksOfApp(reader, SCOPE, october, 1);
    expect(top).toEqual(await plainSum(rows, october, 1));
    expect(top).toEqual([{ linkId: 'oct000', clicks: 20, botClicks: 0 }]);
  });
});

describe('monthsOf', () => {
  it('lists the first day of every month with a day in [first, end)', () => {
    expect(monthsOf('2026-10-15', '2026-10-16')).toEqual(['2026-10-01']);
    expect(monthsOf('2026-10-31', '2026-11-01')).toEqual(['2026-10-01']);
    expect(monthsOf('2026-11-30', '2027-02-02')).toEqual([
      '2026-11-01',
      '2026-12-01',
      '2027-01-01',
      '2027-02-01',
    ]);
    expect(monthsOf('2026-10-01', '2026-10-01')).toEqual([]);
  });
});
