import { AttemptLimiter } from './attempt-limiter';

/** Lets every settled promise's reactions run. */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('AttemptLimiter', () => {
  test('grants up to its capacity, then in order as permits come back', async () => {
    const limiter = new AttemptLimiter(4);
    const releaseA = await limiter.acquire(3);
    const granted: string[] = [];
    const b = limiter.acquire(2).then((release) => {
      granted.push('b');
      return release;
    });
    // Small enough to fit, but behind b: waits (no overtaking).
    const c = limiter.acquire(1).then((release) => {
      granted.push('c');
      return release;
    });
    await flush();
    expect(granted).toEqual([]);
    expect(limiter.inUse).toBe(3);
    releaseA();
    await flush();
    expect(granted).toEqual(['b', 'c']);
    expect(limiter.inUse).toBe(3);
    (await b)();
    (await c)();
    expect(limiter.inUse).toBe(0);
  });

  test('a job wanting more than the capacity takes all of it', async () => {
    const limiter = new AttemptLimiter(2);
    const release = await limiter.acquire(50);
    expect(limiter.inUse).toBe(2);
    release();
    // Giving back twice gives back once.
    release();
    expect(limiter.inUse).toBe(0);
  });
});
