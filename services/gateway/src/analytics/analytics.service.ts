import type {
  AnalyticsColumn,
  AnalyticsDimension,
  AnalyticsInterval,
} from '@linkservice/contracts';
import { linkUrlFor } from '@linkservice/contracts';
import type { LinkOwner } from '../links/links.service';
import type { AnalyticsQuery } from './analytics-params';
import { DAY_MS, DIMENSION_NAME_OF, HOUR_MS } from './analytics-params';
import type {
  AnalyticsRange,
  AnalyticsReader,
  AnalyticsRepository,
  AnalyticsScope,
  Counts,
  SeriesRow,
} from './analytics.repository';
import { topLinksOfApp } from './top-links';

export interface SeriesPoint extends Counts {
  start: string;
  uniqueVisitors: number | null;
}

export interface Breakdown {
  dimension: AnalyticsDimension;
  values: ({ value: string } & Counts)[];
  /** The values past `limit`, together: values + rest always add up to the totals. */
  rest: { values: number } & Counts;
}

export interface TopLink extends Counts {
  linkId: string;
  alias: string;
  url: string;
  title: string | null;
}

export interface Analytics {
  linkId?: string;
  from: string;
  to: string;
  interval: AnalyticsInterval;
  filters: Partial<Record<AnalyticsDimension, string>>;
  tag?: string;
  totals: Counts & { uniqueVisitors: number | null; uniqueVisitorsSummed: boolean };
  series: SeriesPoint[];
  breakdown: Breakdown | null;
  topLinks?: TopLink[];
}

/**
 * The analytics of a link, or of the app and environment of the key (with its top links), from
 * the rollups (never per click). Each answer is read in one REPEATABLE READ transaction, on the
 * read replica when there is one: its totals, series, breakdown and top links are of the same
 * clicks, so a breakdown always adds up to the totals.
 */
export class AnalyticsService {
  constructor(
    private readonly repository: AnalyticsRepository,
    private readonly linkDomain: string,
  ) {}

  /** A link's analytics; undefined when the app has no such link in that environment. */
  async forLink(
    owner: LinkOwner,
    linkId: string,
    query: AnalyticsQuery,
  ): Promise<Analytics | undefined> {
    const scope: AnalyticsScope = {
      appId: owner.appId,
      environment: owner.environment,
      links: { kind: 'link', linkId },
    };
    return this.repository.snapshot(async (reader) => {
      if (!(await reader.linkExists(scope, linkId))) return undefined;
      return { linkId, ...(await answer(reader, scope, query)) };
    });
  }

  /** The app's analytics in the key's environment, with its top links. */
  async forApp(owner: LinkOwner, query: AnalyticsQuery): Promise<Analytics> {
    const scope: AnalyticsScope = {
      appId: owner.appId,
      environment: owner.environment,
      links: query.tag === null ? { kind: 'app' } : { kind: 'tag', tag: query.tag },
    };
    return this.repository.snapshot(async (reader) => {
      const counted = await answer(reader, scope, query);
      const range = rangeOf(query);
      const top =
        range.grain === 'day' && Object.keys(query.filters).length === 0 && query.tag === null
          ? await topLinksOfApp(reader, scope, range, query.limit)
          : await reader.linkTotals(scope, range, query.filters, {
              limit: query.limit,
            });
      const links = new Map(
        (
          await reader.linksByIds(
            scope,
            top.map((link) => link.linkId),
          )
        ).map((link) => [link.id, link]),
      );
      const topLinks = top.flatMap(({ linkId, clicks, botClicks }) => {
        const link = links.get(linkId);
        if (!link) return [];
        const url = linkUrlFor(owner.subdomainKey, owner.environment, link.alias, this.linkDomain);
        return [{ linkId, alias: link.alias, url, title: link.title, clicks, botClicks }];
      });
      return { ...counted, ...(query.tag === null ? {} : { tag: query.tag }), topLinks };
    });
  }
}

/** Totals, series and breakdown of the scope: what both answers have. */
async function answer(
  reader: AnalyticsReader,
  scope: AnalyticsScope,
  query: AnalyticsQuery,
): Promise<Omit<Analytics, 'linkId' | 'topLinks' | 'tag'>> {
  const range = rangeOf(query);
  const filtered = Object.keys(query.filters).length > 0;
  const rows = await reader.series(scope, range, query.filters);
  const series = seriesOf(query, range, rows);
  const totals = series.reduce(
    (sum, point) => ({
      clicks: sum.clicks + point.clicks,
      botClicks: sum.botClicks + point.botClicks,
    }),
    { clicks: 0, botClicks: 0 },
  );
  // Unique visitors are counted per link and day: none by the hour or per dimension value.
  const uniques = range.grain === 'day' && !filtered;
  const days =
    (Date.parse(`${range.end}T00:00:00Z`) - Date.parse(`${range.first}T00:00:00Z`)) / DAY_MS;
  return {
    from: query.from.toISOString(),
    to: query.to.toISOString(),
    interval: query.interval,
    filters: Object.fromEntries(
      Object.entries(query.filters).map(([column, value]) => [
        DIMENSION_NAME_OF[column as AnalyticsColumn],
        value,
      ]),
    ),
    totals: {
      ...totals,
      uniqueVisitors: uniques
        ? rows.reduce((sum, row) => sum + (row.uniqueVisitors ?? 0), 0)
        : null,
      uniqueVisitorsSummed: uniques && !(scope.links.kind === 'link' && days <= 1),
    },
    series: uniques ? series : series.map((point) => ({ ...point, uniqueVisitors: null })),
    breakdown:
      query.groupBy === null
        ? null
        : breakdownOf(
            query.groupBy,
            query.limit,
            await reader.breakdown(scope, range, query.filters, query.groupBy),
          ),
  };
}

/** The buckets the query counts: hours for `hour`, UTC days otherwise; starts within [from, to). */
export function rangeOf(query: Pick<AnalyticsQuery, 'from' | 'to' | 'interval'>): AnalyticsRange {
  if (query.interval === 'hour') {
    const first = Math.ceil(query.from.getTime() / HOUR_MS) * HOUR_MS;
    const end = Math.ceil(query.to.getTime() / HOUR_MS) * HOUR_MS;
    return {
      grain: 'hour',
      first: new Date(first).toISOString(),
      end: new Date(end).toISOString(),
    };
  }
  const first = Math.ceil(query.from.getTime() / DAY_MS) * DAY_MS;
  const end = Math.max(first, Math.ceil(query.to.getTime() / DAY_MS) * DAY_MS);
  return { grain: 'day', first: dateOf(first), end: dateOf(end) };
}

function dateOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Every bucket of the interval in the range, zeros included; months add their days. */
function seriesOf(
  query: Pick<AnalyticsQuery, 'interval'>,
  range: AnalyticsRange,
  rows: readonly SeriesRow[],
): SeriesPoint[] {
  const byBucket = new Map(rows.map((row) => [row.bucket, row]));
  const first = Date.parse(range.grain === 'hour' ? range.first : `${range.first}T00:00:00Z`);
  const end = Date.parse(range.grain === 'hour' ? range.end : `${range.end}T00:00:00Z`);
  const step = range.grain === 'hour' ? HOUR_MS : DAY_MS;
  const points: SeriesPoint[] = [];
  for (let at = first; at < end; at += step) {
    const row = byBucket.get(at);
    const start =
      query.interval === 'month'
        ? new Date(at).toISOString().slice(0, 7) + '-01T00:00:00.000Z'
        : new Date(at).toISOString();
    const point = {
      start,
      clicks: row?.clicks ?? 0,
      botClicks: row?.botClicks ?? 0,
      uniqueVisitors: row?.uniqueVisitors ?? 0,
    };
    const previous = points.at(-1);
    if (previous && previous.start === start) {
      previous.clicks += point.clicks;
      previous.botClicks += point.botClicks;
      previous.uniqueVisitors = (previous.uniqueVisitors ?? 0) + point.uniqueVisitors;
    } else {
      points.push(point);
    }
  }
  return points;
}

function breakdownOf(
  column: AnalyticsColumn,
  limit: number,
  rows: readonly ({ value: string } & Counts)[],
): Breakdown {
  const sorted = [...rows].sort(
    (a, b) =>
      b.clicks - a.clicks ||
      b.botClicks - a.botClicks ||
      (a.value < b.value ? -1 : a.value > b.value ? 1 : 0),
  );
  const values = sorted.slice(0, limit);
  const rest = sorted.slice(limit);
  return {
    dimension: DIMENSION_NAME_OF[column],
    values,
    rest: {
      values: rest.length,
      clicks: rest.reduce((sum, row) => sum + row.clicks, 0),
      botClicks: rest.reduce((sum, row) => sum + row.botClicks, 0),
    },
  };
}
