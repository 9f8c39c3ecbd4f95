import { createHash } from 'node:crypto';
import { LINK_HOST_SHARDS, hashClickToken, shardOfTokenHash } from '@linkservice/link-cache';
import {
  CLICK_TOKEN_LENGTH,
  CLICK_TOKEN_RANDOM_CHARACTERS,
  ClickTokenMinter,
} from './click-token-minter';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A random source that writes 0, 1, ..., 255, 0, 1, ... across fills. */
function countingBytes() {
  let next = 0;
  let fills = 0;
  return {
    fill: (pool: Buffer) => {
      fills += 1;
      for (let i = 0; i < pool.length; i++) pool[i] = next++ % 256;
    },
    fills: () => fills,
  };
}

describe('ClickTokenMinter', () => {
  it('mints 22 base62 characters and their SHA-256', () => {
    const { token, hash } = new ClickTokenMinter().mint(5);
    expect(token).toMatch(/^5[0-9A-Za-z]{21}$/);
    expect(CLICK_TOKEN_RANDOM_CHARACTERS * Math.log2(62)).toBeGreaterThanOrEqual(96);
    // Stored: the shard character (not random), then the SHA-256 of the whole token.
    expect(hash).toBe(`5${createHash('sha256').update(token, 'utf8').digest('base64url')}`);
    expect(hashClickToken(token)).toBe(hash);
  });

  it("mints a token in the shard asked for (its alias'), any shard", () => {
    const minter = new ClickTokenMinter();
    for (let shard = 0; shard < LINK_HOST_SHARDS; shard += 1) {
      for (let i = 0; i < 20; i += 1) {
        const { token, hash } = minter.mint(shard);
        expect(shardOfTokenHash(hash)).toBe(shard);
        expect(token).toHaveLength(CLICK_TOKEN_LENGTH);
      }
    }
  });

  it('never repeats a token', () => {
    const minter = new ClickTokenMinter();
    const tokens = new Set(Array.from({ length: 10_000 }, () => minter.mint(0).token));
    expect(tokens.size).toBe(10_000);
  });

  it('maps bytes below 248 modulo 62 and skips the rest, so no character is favoured', () => {
    // Every byte value exactly 21 times: 21 x 248 accepted bytes = 248 tokens' random parts.
    const bytes = countingBytes();
    const minter = new ClickTokenMinter(bytes.fill, 256 * 21);
    const text = Array.from({ length: 248 }, () => minter.mint(0).token.slice(1)).join('');
    expect(bytes.fills()).toBe(1);
    expect(text.slice(0, 64)).toBe(BASE62 + BASE62.slice(0, 2));
    const counts = new Map<string, number>();
    for (const char of text) counts.set(char, (counts.get(char) ?? 0) + 1);
    // A plain `byte % 62` would give 0-7 five times per 256 bytes and the rest four times.
    expect(new Set(counts.values())).toEqual(new Set([84]));
    expect(counts.size).toBe(62);
  });

  it('refills its pool only when every byte of it is used', () => {
    const bytes = countingBytes();
    const minter = new ClickTokenMinter(bytes.fill, 64);
    minter.mint(0);
    minter.mint(0); // 42 accepted bytes of the first 64: still the first fill
    minter.mint(0); // 63 of them
    expect(bytes.fills()).toBe(1);
    minter.mint(0);
    expect(bytes.fills()).toBe(2);
  });

  it('draws each random character uniformly from the CSPRNG (chi-square over 420,000 characters)', () => {
    const minter = new ClickTokenMinter();
    const counts = new Array<number>(62).fill(0);
    const tokens = 20_000;
    for (let i = 0; i < tokens; i++) {
      for (const char of minter.mint(i % LINK_HOST_SHARDS).token.slice(1)) {
        counts[BASE62.indexOf(char)] += 1;
      }
    }
    const expected = (tokens * CLICK_TOKEN_RANDOM_CHARACTERS) / 62;
    const chiSquare = counts.reduce((sum, n) => sum + (n - expected) ** 2 / expected, 0);
    // 61 degrees of freedom: above 130 by chance about once in ten million runs; a `% 62`
    // bias gives about 3,000.
    expect(chiSquare).toBeLessThan(130);
  });
});
