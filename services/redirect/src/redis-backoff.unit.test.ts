import { RedisBackoff } from './redis-backoff';

describe('RedisBackoff', () => {
  it('allows Redis until a call fails uncertainly, then skips it for the window', () => {
    const backoff = new RedisBackoff(1_000, () => 0);
    expect(backoff.allows(0)).toBe(true);
    backoff.trip(5_000);
    expect(backoff.allows(5_000)).toBe(false);
    expect(backoff.allows(5_999)).toBe(false);
    expect(backoff.allows(6_000)).toBe(true);
  });

  it('is extended, never shortened, by failures that arrive during the window', () => {
    const backoff = new RedisBackoff(1_000, () => 0);
    backoff.trip(5_000);
    backoff.trip(5_300);
    expect(backoff.allows(6_200)).toBe(false);
    expect(backoff.allows(6_300)).toBe(true);
    backoff.trip(4_000);
    expect(backoff.allows(6_300)).toBe(true);
  });

  it('reads its clock when not given the time', () => {
    let now = 100;
    const backoff = new RedisBackoff(50, () => now);
    backoff.trip();
    expect(backoff.allows()).toBe(false);
    now = 150;
    expect(backoff.allows()).toBe(true);
  });
});
