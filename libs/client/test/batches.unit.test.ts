import type { BatchReport } from '../src';
import { MAX_BATCH_ENTRIES, splitIntoChunks } from '../src';
import { chunkIdempotencyKey, mergeReports, shiftReport } from '../src/batches';
import type { Link } from '../src/types';

const link = (id: string) => ({ id }) as Link;

describe('splitIntoChunks', () => {
  it('cuts in order into slices of at most 100', () => {
    const entries = Array.from({ length: 250 }, (_, index) => index);
    const chunks = splitIntoChunks(entries);
    expect(chunks.map((chunk) => chunk.length)).toEqual([100, 100, 50]);
    expect(chunks.flat()).toEqual(entries);
    expect(splitIntoChunks(entries.slice(0, 100))).toHaveLength(1);
    expect(splitIntoChunks([])).toEqual([]);
    expect(splitIntoChunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('refuses a chunk size the gateway would refuse', () => {
    for (const size of [0, -1, 1.5, MAX_BATCH_ENTRIES + 1, Number.NaN]) {
      expect(() => splitIntoChunks([1], size)).toThrow(RangeError);
    }
  });
});

describe('chunkIdempotencyKey', () => {
  it('names each chunk under the run key', () => {
    expect(chunkIdempotencyKey('order-7', 0)).toBe('order-7:0');
    expect(chunkIdempotencyKey('order-7', 12)).toBe('order-7:12');
  });
});

describe('shiftReport', () => {
  /** A chunk stopped by the rate limit at its second entry, its indexes counted from `first`. */
  const rateLimitedReport = (first: number): BatchReport => ({
    created: 1,
    failed: 1,
    notAttempted: 2,
    results: [
      { index: first, ok: true, link: link('lnk_a') },
      { index: first + 1, ok: false, error: 'rate_limited', message: 'limit' },
    ],
    stoppedEarly: { reason: 'rate_limited', atIndex: first + 1, message: 'limit' },
  });

  it('puts indexes, stoppedEarly included, in terms of the whole input', () => {
    const chunk = rateLimitedReport(0);
    expect(shiftReport(chunk, 200)).toEqual(rateLimitedReport(200));
    expect(chunk.results[0].index).toBe(0);
  });
});

describe('mergeReports', () => {
  it('sums the counts and concatenates the results in input order', () => {
    const first: BatchReport = {
      created: 2,
      failed: 0,
      notAttempted: 0,
      results: [
        { index: 0, ok: true, link: link('lnk_a') },
        { index: 1, ok: true, link: link('lnk_b') },
      ],
    };
    const second = shiftReport(
      {
        created: 1,
        failed: 1,
        notAttempted: 0,
        results: [
          {
            index: 0,
            ok: false,
            error: 'validation_failed',
            message: 'bad',
            fieldErrors: { alias: 'taken' },
          },
          { index: 1, ok: true, link: link('lnk_c') },
        ],
      },
      2,
    );
    const merged = mergeReports(4, [
      { size: 2, report: first },
      { size: 2, report: second },
    ]);
    expect(merged).toEqual({
      created: 3,
      failed: 1,
      notAttempted: 0,
      unknown: 0,
      results: [
        { index: 0, ok: true, link: link('lnk_a') },
        { index: 1, ok: true, link: link('lnk_b') },
        {
          index: 2,
          ok: false,
          error: 'validation_failed',
          message: 'bad',
          fieldErrors: { alias: 'taken' },
        },
        { index: 3, ok: true, link: link('lnk_c') },
      ],
    });
  });

  it('counts the entries of chunks never reported on as not attempted', () => {
    const stopped = shiftReport(
      {
        created: 1,
        failed: 1,
        notAttempted: 98,
        results: [
          { index: 0, ok: true, link: link('lnk_a') },
          { index: 1, ok: false, error: 'plan_limit_reached', message: 'plan' },
        ],
        stoppedEarly: { reason: 'plan_limit_reached', atIndex: 1, message: 'plan' },
      },
      100,
    );
    const full: BatchReport = { created: 100, failed: 0, notAttempted: 0, results: [] };
    const merged = mergeReports(250, [
      { size: 100, report: full },
      { size: 100, report: stopped },
    ]);
    expect(merged).toMatchObject({
      created: 101,
      failed: 1,
      notAttempted: 98 + 50,
      stoppedEarly: { reason: 'plan_limit_reached', atIndex: 101, message: 'plan' },
    });
    expect(merged.created + merged.failed + merged.notAttempted).toBe(250);
    expect(mergeReports(30, [])).toEqual({
      created: 0,
      failed: 0,
      notAttempted: 30,
      unknown: 0,
      results: [],
    });
  });

  it('counts the entries of a chunk of unknown outcome apart from the not attempted', () => {
    const full: BatchReport = { created: 100, failed: 0, notAttempted: 0, results: [] };
    const merged = mergeReports(250, [{ size: 100, report: full }], 100);
    expect(merged).toMatchObject({ created: 100, failed: 0, notAttempted: 50, unknown: 100 });
  });
});
