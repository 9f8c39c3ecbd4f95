import {
  addMonths,
  boundLiteral,
  monthsToEnsure,
  parsePartitionName,
  partitionName,
  retentionCutoffs,
} from './analytics-months';

describe('the analytics calendar', () => {
  it('ensures the previous month through three ahead, across a year end', () => {
    expect(monthsToEnsure(new Date('2026-12-31T23:59:59.999Z'))).toEqual([
      { year: 2026, month: 11 },
      { year: 2026, month: 12 },
      { year: 2027, month: 1 },
      { year: 2027, month: 2 },
      { year: 2027, month: 3 },
    ]);
    // UTC months: just after midnight UTC on the 1st is the new month, whatever the local zone.
    expect(monthsToEnsure(new Date('2027-01-01T00:00:00.000Z'))[1]).toEqual({
      year: 2027,
      month: 1,
    });
    expect(addMonths({ year: 2026, month: 1 }, -1)).toEqual({ year: 2025, month: 12 });
    expect(addMonths({ year: 2026, month: 12 }, 13)).toEqual({ year: 2028, month: 1 });
  });

  it('names partitions <table>_yYYYYmMM and reads only such names back', () => {
    expect(partitionName('click_rollup_hours', { year: 2026, month: 3 })).toBe(
      'click_rollup_hours_y2026m03',
    );
    expect(parsePartitionName('link_click_days', 'link_click_days_y2027m11')).toEqual({
      year: 2027,
      month: 11,
    });
    for (const other of [
      'link_click_days_default',
      'link_click_days_y2027m13',
      'link_click_days_y2027m1',
      'click_rollup_days_y2027m11',
    ]) {
      expect(parsePartitionName('link_click_days', other)).toBeNull();
    }
  });

  it('writes bounds as UTC literals of the key type', () => {
    const at = new Date(Date.UTC(2026, 10, 1));
    expect(boundLiteral('click_rollup_hours', at)).toBe("'2026-11-01T00:00:00.000Z'");
    expect(boundLiteral('link_click_days', at)).toBe("'2026-11-01'");
  });

  it('puts each cutoff where its retention ends', () => {
    const cutoffs = retentionCutoffs(new Date('2026-03-10T15:30:00.000Z'), {
      hourlyDays: 90,
      dailyDays: 800,
    });
    const iso = (table: keyof typeof cutoffs) => cutoffs[table].toISOString();
    // 90 days of hours back from now, to the minute.
    expect(iso('click_rollup_hours')).toBe('2025-12-10T15:30:00.000Z');
    // 800 whole days before today (UTC).
    expect(iso('link_click_days')).toBe('2023-12-31T00:00:00.000Z');
    expect(iso('click_rollup_days')).toBe(iso('link_click_days'));
    expect(iso('click_dimension_days')).toBe(iso('link_click_days'));
    // December 2023 has not ended before 2023-12-31: only November 2023 and earlier go.
    expect(iso('link_click_months')).toBe('2023-12-01T00:00:00.000Z');
    // Today and the two days before are kept.
    expect(iso('click_dimension_values')).toBe('2026-03-08T00:00:00.000Z');
  });
});
