import type { Link } from '@linkservice/contracts';
import type { EntryResult } from '@linkservice/creation';
import { ALIAS_REPEATED, ENTRY_INVALID_MESSAGE } from '@linkservice/creation';
import { checkBatchEntries, mergeBatchResults } from './batch-request';

const link = (alias: string) => ({ alias }) as unknown as Link;
const created = (index: number): EntryResult => ({ index, ok: true, link: link(`a${index}`) });
const invalid = (index: number): EntryResult => ({
  index,
  ok: false,
  error: 'validation_failed',
  message: 'The entry is invalid.',
  fieldErrors: { webFallbackUrl: 'is required' },
});

describe('mergeBatchResults', () => {
  it('lists gateway and worker results together, by index', () => {
    const report = mergeBatchResults(5, [invalid(1), invalid(3)], {
      results: [created(0), created(2), created(4)],
    });
    expect(report.results.map((r) => r.index)).toEqual([0, 1, 2, 3, 4]);
    expect(report).toMatchObject({ created: 3, failed: 2, notAttempted: 0 });
    expect(report).not.toHaveProperty('stoppedEarly');
  });

  it('drops gateway failures after the entry the worker stopped at', () => {
    const stoppedEarly = { reason: 'rate_limited' as const, atIndex: 2, message: 'limit' };
    const refused: EntryResult = {
      index: 2,
      ok: false,
      error: 'rate_limited',
      message: 'limit',
    };
    const report = mergeBatchResults(6, [invalid(1), invalid(4)], {
      results: [created(0), refused],
      stoppedEarly,
    });
    expect(report.results.map((r) => r.index)).toEqual([0, 1, 2]);
    expect(report).toEqual({
      created: 1,
      failed: 2,
      notAttempted: 3,
      results: [created(0), invalid(1), refused],
      stoppedEarly,
    });
  });

  it('reports every entry as failed when none reached the worker', () => {
    const report = mergeBatchResults(2, [invalid(1), invalid(0)], undefined);
    expect(report).toEqual({
      created: 0,
      failed: 2,
      notAttempted: 0,
      results: [invalid(0), invalid(1)],
    });
  });
});

describe('checkBatchEntries', () => {
  const now = new Date('2030-01-01T00:00:00Z');
  const valid = (extra: Record<string, unknown> = {}) => ({
    webFallbackUrl: 'https://a.example',
    ...extra,
  });
  const fieldErrorsOf = (entries: Record<string, unknown>[]) =>
    checkBatchEntries(entries, now).failures.map(({ index, ...failure }) => ({
      index,
      fieldErrors: failure.ok ? undefined : failure.fieldErrors,
    }));

  it('refuses an alias repeated from an earlier entry that failed on another field', () => {
    const checked = checkBatchEntries(
      [
        { alias: 'dup', webFallbackUrl: 'ftp://x' },
        { alias: 'dup', webFallbackUrl: 'https://a.example' },
      ],
      now,
    );
    expect(checked.valid).toEqual([]);
    expect(checked.failures).toEqual([
      {
        index: 0,
        ok: false,
        error: 'validation_failed',
        message: ENTRY_INVALID_MESSAGE,
        fieldErrors: { webFallbackUrl: expect.any(String) },
      },
      {
        index: 1,
        ok: false,
        error: 'validation_failed',
        message: ENTRY_INVALID_MESSAGE,
        fieldErrors: { alias: ALIAS_REPEATED },
      },
    ]);
  });

  it('adds the repeat to the other errors of a later entry', () => {
    expect(fieldErrorsOf([valid({ alias: 'dup' }), { alias: 'dup', title: 7 }])).toEqual([
      {
        index: 1,
        fieldErrors: {
          title: expect.any(String),
          webFallbackUrl: expect.any(String),
          alias: ALIAS_REPEATED,
        },
      },
    ]);
  });

  it('refuses every later repeat, and passes the first valid use of each alias', () => {
    const checked = checkBatchEntries(
      [valid({ alias: 'a' }), valid({ alias: 'a' }), valid({ alias: 'b' }), valid({ alias: 'a' })],
      now,
    );
    expect(checked.valid.map((entry) => [entry.index, entry.draft.alias])).toEqual([
      [0, 'a'],
      [2, 'b'],
    ]);
    expect(checked.failures.map((failure) => failure.index)).toEqual([1, 3]);
  });

  it('compares alias strings exactly, and only strings', () => {
    const checked = checkBatchEntries(
      [
        valid({ alias: 'Dup' }),
        valid({ alias: 'dup' }),
        { alias: 5, webFallbackUrl: 'https://a.example' },
        valid({ alias: '5' }),
        valid({ alias: null }),
        valid({ alias: null }),
        valid(),
        valid(),
      ],
      now,
    );
    expect(checked.valid.map((entry) => entry.index)).toEqual([0, 1, 3, 4, 5, 6, 7]);
    expect(checked.failures).toEqual([
      expect.objectContaining({ index: 2, fieldErrors: { alias: expect.any(String) } }),
    ]);
  });

  it("keeps a later entry's own alias error rather than calling it a repeat", () => {
    const failures = fieldErrorsOf([
      valid({ alias: 'not valid!' }),
      valid({ alias: 'not valid!' }),
      valid({ alias: 'api' }),
      valid({ alias: 'api' }),
    ]);
    expect(failures.map((failure) => failure.index)).toEqual([0, 1, 2, 3]);
    expect(failures[1].fieldErrors).toEqual(failures[0].fieldErrors);
    expect(failures[3].fieldErrors).toEqual(failures[2].fieldErrors);
    for (const { fieldErrors } of failures) {
      expect(fieldErrors?.alias).toEqual(expect.any(String));
      expect(fieldErrors?.alias).not.toBe(ALIAS_REPEATED);
    }
  });
});
