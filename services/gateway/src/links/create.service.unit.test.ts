import { remainingMs } from './create.service';

describe('remainingMs', () => {
  it('is what is left of the creation deadline, never below 0', () => {
    expect(remainingMs(10_000, 7_500)).toBe(2_500);
    expect(remainingMs(10_000, 10_000)).toBe(0);
    // The reservation took longer than the whole budget: the job is settled at once.
    expect(remainingMs(10_000, 10_400)).toBe(0);
  });
});
