import { retryAfterSeconds } from './retry-after';

describe('retryAfterSeconds', () => {
  it.each([
    [0, 1],
    [1, 1],
    [999, 1],
    [1000, 1],
    [1001, 2],
    [59_001, 60],
    [60_000, 60],
  ])('%i ms before the window ends: Retry-After %i', (ms, seconds) => {
    expect(retryAfterSeconds(ms)).toBe(seconds);
  });
});
