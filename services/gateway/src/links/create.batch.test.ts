import type { Link } from '@linkservice/contracts';
import type { EntryResult } from '@linkservice/queue';
import { mergeBatchResults } from './create.batch';

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
