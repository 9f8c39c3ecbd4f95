import { nestsDeeperThan } from './json-depth';

/** `levels` arrays, one inside the other, parsed from text (a literal that deep would not fit). */
function arrays(levels: number): unknown {
  return JSON.parse(`${'['.repeat(levels)}${']'.repeat(levels)}`);
}

describe('nestsDeeperThan', () => {
  it('counts the value itself as level 1, and scalars as no level', () => {
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan('text', 0)).toBe(false);
    expect(nestsDeeperThan(null, 0)).toBe(false);
    expect(nestsDeeperThan({ a: 1, b: 'two', c: null }, 1)).toBe(false);
  });

  it('finds the deepest branch, in objects and arrays alike', () => {
    const value = { a: [1, 2], b: { c: { d: [] } }, e: [] };
    expect(nestsDeeperThan(value, 4)).toBe(false);
    expect(nestsDeeperThan(value, 3)).toBe(true);
    expect(nestsDeeperThan([[], [[[]]], []], 4)).toBe(false);
    expect(nestsDeeperThan([[], [[[]]], []], 3)).toBe(true);
  });

  it('sees a member named __proto__', () => {
    const value: unknown = JSON.parse('{"__proto__":{"a":{"b":{}}}}');
    expect(nestsDeeperThan(value, 4)).toBe(false);
    expect(nestsDeeperThan(value, 3)).toBe(true);
  });

  it('walks a value nested far deeper than the call stack goes', () => {
    const value = arrays(1_000_000);
    expect(nestsDeeperThan(value, 128)).toBe(true);
    expect(nestsDeeperThan(value, 1_000_000)).toBe(false);
  });
});
