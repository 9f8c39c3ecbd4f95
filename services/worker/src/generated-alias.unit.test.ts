import { isReservedAlias } from '@linkservice/contracts';
import { GENERATED_ALIAS_LENGTH, generateAliases, randomAlias } from './generated-alias';

describe('generated aliases', () => {
  it('are 8 base62 characters', () => {
    for (let i = 0; i < 1_000; i++) {
      expect(randomAlias()).toMatch(/^[A-Za-z0-9]{8}$/);
    }
    expect(GENERATED_ALIAS_LENGTH).toBeGreaterThanOrEqual(7);
  });

  it('are distinct, never reserved and never one of the aliases to avoid', () => {
    const avoid = new Set(['abcdefgh']);
    const aliases = generateAliases(5_000, avoid);
    expect(new Set(aliases).size).toBe(5_000);
    expect(aliases.some((alias) => isReservedAlias(alias) || avoid.has(alias))).toBe(false);
  });

  it('use the whole alphabet about evenly (no modulo bias towards the first letters)', () => {
    const counts = new Map<string, number>();
    const sample = generateAliases(20_000, new Set()).join('');
    for (const char of sample) counts.set(char, (counts.get(char) ?? 0) + 1);
    expect(counts.size).toBe(62);
    const expected = sample.length / 62;
    for (const count of counts.values()) {
      expect(Math.abs(count - expected) / expected).toBeLessThan(0.15);
    }
  });
});
