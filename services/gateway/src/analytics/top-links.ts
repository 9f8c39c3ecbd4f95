import type {
  AnalyticsRange,
  AnalyticsReader,
  AnalyticsScope,
  LinkCounts,
} from './analytics.repository';

/** What the planner reads: each month's leaders, and links' exact totals over the range. */
export type TopLinksReader = Pick<AnalyticsReader, 'monthTop' | 'linkTotals'>;

export interface CandidateRounds {
  /** Candidates taken per month in the first round (at least ten times the limit). */
  first: number;
  /**
   * From this many per month on, the plain sum over every link answers instead: a round that
   * large reads about as much as the sum (and passes every id back in).
   */
  max: number;
}

export const CANDIDATE_ROUNDS: CandidateRounds = { first: 100, max: 100_000 };

/** The first day (YYYY-MM-DD) of every month with a day in [first, end). */
export function monthsOf(first: string, end: string): string[] {
  const months: string[] = [];
  const last = new Date(Date.parse(`${end}T00:00:00Z`) - 86_400_000);
  let year = Number(first.slice(0, 4));
  let month = Number(first.slice(5, 7));
  while (
    year < last.getUTCFullYear() ||
    (year === last.getUTCFullYear() && month <= last.getUTCMonth() + 1)
  ) {
    months.push(`${year}-${String(month).padStart(2, '0')}-01`);
    month += 1;
    if (month > 12) {
      month = 1;
      year += 1;
    }
  }
  return months;
}

/**
 * The app's top `limit` links by people's clicks over a range of days, without filters: exact,
 * without summing every link's days (1 s for 100,000 links over 30 days here).
 *
 * A threshold algorithm over link_click_months: for each month the range touches, the K links
 * with the most clicks that month (its ordered index); t(m) is the K-th one's clicks (0 when the
 * month has fewer than K links). A link outside every month's K has at most t(m) clicks in each
 * month, so at most the sum of t(m) in the range. The candidates' exact totals over the range
 * (link_click_days) give the answer when the limit-th exceeds that sum, or when no month had
 * K links (every link was a candidate); otherwise K grows tenfold, and once it reaches `rounds.max`
 * the plain sum over every link answers.
 */
export async function topLinksOfApp(
  reader: TopLinksReader,
  scope: AnalyticsScope,
  range: AnalyticsRange,
  limit: number,
  rounds: CandidateRounds = CANDIDATE_ROUNDS,
): Promise<LinkCounts[]> {
  const months = monthsOf(range.first, range.end);
  for (let count = Math.max(rounds.first, limit * 10); count < rounds.max; count *= 10) {
    const candidates = new Set<string>();
    let bound = 0;
    let every = true;
    for (const month of months) {
      const top = await reader.monthTop(scope, month, count);
      for (const { linkId } of top) candidates.add(linkId);
      if (top.length === count) {
        every = false;
        bound += top[count - 1].clicks;
      }
    }
    const exact = await reader.linkTotals(scope, range, {}, { candidates: [...candidates] });
    if (every || (exact.length >= limit && exact[limit - 1].clicks > bound))
      return exact.slice(0, limit);
  }
  return reader.linkTotals(scope, range, {}, { limit });
}
