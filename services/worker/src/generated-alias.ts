import { randomBytes } from 'node:crypto';
import { isReservedAlias } from '@linkservice/contracts';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** 62^8 ≈ 2.2e14 values: collisions are rare, and the insert retries the few that happen. */
export const GENERATED_ALIAS_LENGTH = 8;
/** Bytes at or above this would favour the first letters (256 is not a multiple of 62). */
const UNBIASED_LIMIT = 256 - (256 % ALPHABET.length);

/** One random alias of base62 characters from the CSPRNG, without modulo bias. */
export function randomAlias(): string {
  let alias = '';
  while (alias.length < GENERATED_ALIAS_LENGTH) {
    for (const byte of randomBytes(GENERATED_ALIAS_LENGTH * 2)) {
      if (byte >= UNBIASED_LIMIT) continue;
      alias += ALPHABET.charAt(byte % ALPHABET.length);
      if (alias.length === GENERATED_ALIAS_LENGTH) break;
    }
  }
  return alias;
}

/**
 * `count` distinct generated aliases, none reserved and none in `avoid` (the caller aliases of the
 * same batch, so one insert never holds the same alias twice).
 */
export function generateAliases(count: number, avoid: ReadonlySet<string>): string[] {
  const aliases = new Set<string>();
  while (aliases.size < count) {
    const alias = randomAlias();
    if (!avoid.has(alias) && !isReservedAlias(alias)) aliases.add(alias);
  }
  return [...aliases];
}
