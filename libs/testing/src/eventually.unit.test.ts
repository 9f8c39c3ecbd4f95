import { eventually } from './eventually';

describe('eventually', () => {
  it('returns the first value that is neither undefined nor false', async () => {
    const values = [undefined, false, 0, 1];
    await expect(eventually(() => values.shift(), { intervalMs: 1 })).resolves.toBe(0);
  });

  it('fails at the deadline, naming the condition', async () => {
    const started = Date.now();
    await expect(
      eventually(() => Promise.resolve(false), { timeoutMs: 50, intervalMs: 5, what: 'never' }),
    ).rejects.toThrow('never not reached within 50 ms');
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
  });
});
