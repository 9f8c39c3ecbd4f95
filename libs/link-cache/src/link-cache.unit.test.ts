import { replicaFenceOf } from './link-cache';

describe('replicaFenceOf', () => {
  it("is the later of the alias' and the host's invalidation times", () => {
    expect(replicaFenceOf('1795842459739')).toBe(1795842459739);
    expect(replicaFenceOf('1795842459739/1795842459800')).toBe(1795842459800);
    expect(replicaFenceOf('1795842459900/1795842459800')).toBe(1795842459900);
    // Only the host was invalidated.
    expect(replicaFenceOf('/1795842459800')).toBe(1795842459800);
  });

  it('fences nothing without a generation: nothing was invalidated within its TTL', () => {
    expect(replicaFenceOf(null)).toBeNull();
  });

  it('sends a 0.1 counter (not a time) to the primary: it says nothing of when', () => {
    expect(replicaFenceOf('3')).toBe(Infinity);
    expect(replicaFenceOf('3/1795842459800')).toBe(Infinity);
    expect(replicaFenceOf('not a number')).toBe(Infinity);
  });
});
