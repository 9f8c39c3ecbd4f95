/**
 * The calendar of the analytics tables' maintenance (the click-analytics migration): which
 * monthly partitions exist ahead, what they are called and bounded by, and where each table's
 * retention ends. Pure: the repository runs it against Postgres.
 */

/** The partitioned analytics tables and the column each is partitioned by (RANGE, monthly). */
export const PARTITION_KEYS = {
  click_rollup_hours: 'hour',
  click_rollup_days: 'day',
  click_dimension_days: 'day',
  link_click_days: 'day',
} as const;

export type PartitionedTable = keyof typeof PARTITION_KEYS;

export const PARTITIONED_TABLES = Object.keys(PARTITION_KEYS) as PartitionedTable[];

/** Every analytics table the worker deletes from past its retention. */
export type AnalyticsTable = PartitionedTable | 'link_click_months' | 'click_dimension_values';

/** Every analytics table (the click-analytics migration's). */
export const ANALYTICS_TABLES: readonly AnalyticsTable[] = [
  ...PARTITIONED_TABLES,
  'link_click_months',
  'click_dimension_values',
];

export function isPartitioned(table: AnalyticsTable): table is PartitionedTable {
  return Object.hasOwn(PARTITION_KEYS, table);
}

/** The column whose value decides when a row is past its retention. */
export const RETENTION_KEYS: Record<AnalyticsTable, 'hour' | 'day' | 'month'> = {
  ...PARTITION_KEYS,
  link_click_months: 'month',
  click_dimension_values: 'day',
};

export interface AnalyticsRetention {
  hourlyDays: number;
  dailyDays: number;
}

/** A UTC calendar month. */
export interface Month {
  year: number;
  /** 1 to 12. */
  month: number;
}

/** Months created ahead of the clicks: the previous one (late batches) through 3 ahead. */
export const MONTHS_BEHIND = 1;
export const MONTHS_AHEAD = 3;

/** Values of the capped dimensions admitted per day are needed for today and a late flush's day. */
const DIMENSION_VALUES_DAYS = 2;

const DAY_MS = 86_400_000;

export function monthOf(date: Date): Month {
  return { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1 };
}

export function addMonths({ year, month }: Month, count: number): Month {
  const index = year * 12 + (month - 1) + count;
  return { year: Math.floor(index / 12), month: (index % 12) + 1 };
}

/** Midnight UTC of the month's first day. */
export function monthStart({ year, month }: Month): Date {
  return new Date(Date.UTC(year, month - 1, 1));
}

/** The partitions ensureMonths keeps in place at `now`, the oldest first. */
export function monthsToEnsure(now: Date): Month[] {
  const current = monthOf(now);
  return Array.from({ length: MONTHS_BEHIND + 1 + MONTHS_AHEAD }, (_, i) =>
    addMonths(current, i - MONTHS_BEHIND),
  );
}

/** `<table>_yYYYYmMM`, e.g. click_rollup_hours_y2026m11. */
export function partitionName(table: PartitionedTable, { year, month }: Month): string {
  return `${table}_y${String(year).padStart(4, '0')}m${String(month).padStart(2, '0')}`;
}

/** The month of a partition named by partitionName; null for any other name (the DEFAULT). */
export function parsePartitionName(table: PartitionedTable, name: string): Month | null {
  const match = /^_y(\d{4})m(\d{2})$/.exec(name.startsWith(table) ? name.slice(table.length) : '');
  if (!match) return null;
  const month = { year: Number(match[1]), month: Number(match[2]) };
  return month.month >= 1 && month.month <= 12 ? month : null;
}

/**
 * A bound as SQL text for the table's partition key: `'2026-11-01'` for a date,
 * `'2026-11-01T00:00:00.000Z'` (UTC, whatever the session's TimeZone) for a timestamptz.
 * Made here from a Date only, so it is safe to place in DDL, which takes no parameters.
 */
export function boundLiteral(table: AnalyticsTable, at: Date): string {
  const text = RETENTION_KEYS[table] === 'hour' ? at.toISOString() : at.toISOString().slice(0, 10);
  return `'${text}'`;
}

function utcMidnight(date: Date): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate()));
}

/**
 * Per table, the first value kept at `now`: rows whose key is below it are past their
 * retention. Hourly rows older than the hourly retention; daily rows of days before today (UTC)
 * minus the daily retention; a month's totals once the month ended before that day; the
 * admitted dimension values of days before the day before yesterday.
 */
export function retentionCutoffs(
  now: Date,
  retention: AnalyticsRetention,
): Record<AnalyticsTable, Date> {
  const today = utcMidnight(now);
  const daily = new Date(today.getTime() - retention.dailyDays * DAY_MS);
  return {
    click_rollup_hours: new Date(now.getTime() - retention.hourlyDays * DAY_MS),
    click_rollup_days: daily,
    click_dimension_days: daily,
    link_click_days: daily,
    // A month ends at the next one's first day: it ended before `daily` exactly when it began
    // before the month `daily` falls in.
    link_click_months: monthStart(monthOf(daily)),
    click_dimension_values: new Date(today.getTime() - DIMENSION_VALUES_DAYS * DAY_MS),
  };
}
