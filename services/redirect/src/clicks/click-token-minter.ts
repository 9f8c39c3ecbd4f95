import { randomFillSync } from 'node:crypto';
import {
  CLICK_TOKEN_ALPHABET,
  clickTokenShardCharacter,
  hashClickToken,
} from '@linkservice/link-cache';

/**
 * Click tokens (app-interface.md): the `ls_click` value the link host mints with every counted
 * click, which an app hands back after its install to find the link that was tapped. 22 base62
 * characters: the first names the link host shard its key is in (the alias clicked's; see
 * @linkservice/link-cache's link-host-keys.ts), the other 21 carry 21 x log2(62) = 125 random
 * bits (at least 96 are required), so a token can be neither guessed nor enumerated. Only its
 * SHA-256 is ever stored, behind that first character (`hashClickToken`; click-token-store.ts
 * says where and how).
 */
export const CLICK_TOKEN_LENGTH = 22;
/** The characters drawn from the CSPRNG: all but the first. */
export const CLICK_TOKEN_RANDOM_CHARACTERS = CLICK_TOKEN_LENGTH - 1;

const BASE62 = Buffer.from(CLICK_TOKEN_ALPHABET);
/**
 * 4 x 62: a byte below it taken modulo 62 is uniform over the alphabet; a byte at or above it
 * would favour the first 8 characters, so it is skipped (about 3% of bytes).
 */
const UNBIASED_BELOW = 248;
/** One randomFillSync per ~180 tokens instead of one per token: it costs microseconds a call. */
const POOL_BYTES = 4096;

export interface ClickToken {
  /** The token itself: sent once, in the Play referrer or the page to copy, never stored. */
  token: string;
  /** Its first character and SHA-256 (`hashClickToken`): the name it is stored under. */
  hash: string;
}

/**
 * Mints tokens from a pool of CSPRNG bytes, refilled when used up; no byte is used twice.
 * `fill` is the random source (crypto's randomFillSync; tests pass a known sequence).
 */
export class ClickTokenMinter {
  private readonly pool: Buffer;
  private offset: number;

  constructor(
    private readonly fill: (pool: Buffer) => void = randomFillSync,
    poolBytes = POOL_BYTES,
  ) {
    this.pool = Buffer.alloc(poolBytes);
    this.offset = poolBytes;
  }

  /**
   * A token whose key is in link host shard `shard`, the shard of the alias clicked, so that the
   * lookup counting its click touches one shard: its first character names the shard
   * (`clickTokenShardCharacter`), the rest are drawn.
   */
  mint(shard: number): ClickToken {
    const token = Buffer.allocUnsafe(CLICK_TOKEN_LENGTH);
    token.write(clickTokenShardCharacter(shard), 0, 'latin1');
    let length = 1;
    while (length < CLICK_TOKEN_LENGTH) {
      if (this.offset === this.pool.length) {
        this.fill(this.pool);
        this.offset = 0;
      }
      const byte = this.pool[this.offset++];
      if (byte < UNBIASED_BELOW) token[length++] = BASE62[byte % BASE62.length];
    }
    return { token: token.toString('latin1'), hash: hashClickToken(token) };
  }
}
