import { withinOr } from './bounded';

describe('withinOr', () => {
  it('is the work when it settles in time', async () => {
    await expect(withinOr(Promise.resolve(3), 1_000, null)).resolves.toBe(3);
  });

  it('is the fallback when the work fails', async () => {
    await expect(withinOr(Promise.reject(new Error('down')), 1_000, null)).resolves.toBeNull();
  });

  it('is the fallback once the time is up, however long the work hangs', async () => {
    const started = Date.now();
    await expect(withinOr(new Promise<number>(() => undefined), 50, null)).resolves.toBeNull();
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
