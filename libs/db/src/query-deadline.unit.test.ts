import {
  currentQueryDeadline,
  QueryDeadlineExceeded,
  queryBudget,
  withQueryDeadline,
} from './query-deadline';

describe('queryBudget', () => {
  const now = 1_000_000;

  it('is unbounded with neither a scope nor a pool default', () => {
    expect(queryBudget(now, undefined, undefined)).toEqual({ kind: 'unbounded' });
    expect(queryBudget(now, undefined, 0)).toEqual({ kind: 'unbounded' });
  });

  it('takes the pool default outside a scope', () => {
    expect(queryBudget(now, undefined, 2_000)).toEqual({ kind: 'bounded', ms: 2_000 });
  });

  it('takes what is left of the scope, in place of the pool default', () => {
    expect(queryBudget(now, now + 800, 2_000)).toEqual({ kind: 'bounded', ms: 800 });
    // Longer than the pool default: the settle's lock wait must not be cut by it.
    expect(queryBudget(now, now + 5_000, 2_000)).toEqual({ kind: 'bounded', ms: 5_000 });
  });

  it('rounds a fraction of a millisecond up, never to 0', () => {
    expect(queryBudget(now, now + 0.2, undefined)).toEqual({ kind: 'bounded', ms: 1 });
  });

  it('is expired at and after the deadline', () => {
    expect(queryBudget(now, now, 2_000)).toEqual({ kind: 'expired' });
    expect(queryBudget(now, now - 1, 2_000)).toEqual({ kind: 'expired' });
  });
});

describe('withQueryDeadline', () => {
  it('sets the deadline for what runs inside, across awaits, and the inner scope wins', async () => {
    expect(currentQueryDeadline()).toBeUndefined();
    const before = Date.now();
    await withQueryDeadline(1_000, async () => {
      await Promise.resolve();
      const outer = currentQueryDeadline()!;
      expect(outer).toBeGreaterThanOrEqual(before + 1_000);
      expect(outer).toBeLessThanOrEqual(Date.now() + 1_000);
      await withQueryDeadline(60_000, async () => {
        await Promise.resolve();
        expect(currentQueryDeadline()).toBeGreaterThan(outer + 50_000);
      });
      expect(currentQueryDeadline()).toBe(outer);
    });
    expect(currentQueryDeadline()).toBeUndefined();
  });
});

describe('QueryDeadlineExceeded', () => {
  it('is named for the error mapping', () => {
    expect(new QueryDeadlineExceeded()).toMatchObject({
      name: 'QueryDeadlineExceeded',
      message: 'query deadline exceeded',
    });
  });
});
