import { randomFillSync } from 'node:crypto';
import { hashClickToken, shardOfTokenHash } from '@linkservice/link-cache';

/**
 * Click tokens (app-interface.md): the `ls_click` value the link host mints with every counted
 * click, which an app hands back after its install to find the link that was tapped. 22 base62
 * characters carry 22 x log2(62) = 131 random bits (at least 96 are required), so a token can be
 * neither guessed nor enumerated. Only its SHA-256 is ever stored (see @linkservice/link-cache's
 * click-token-store.ts for where and how).
 */
export const CLICK_TOKEN_LENGTH = 22;

const BASE62 = Buffer.from('0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz');
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
  /** SHA-256 of the token's text, base64url (`hashClickToken`): the name it is stored under. */
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
   * A token whose key is in link host shard `shard` (`shardOfTokenHash`; link-host-keys.ts), the
   * shard of the alias clicked, so that the lookup counting its click touches one shard. Tokens
   * are drawn until one falls there (1 in LINK_HOST_SHARDS: 16 draws on average, a few
   * microseconds); every draw is as random as the next, so the token keeps all its bits but the
   * shard's 4, which its hash, not its text, carries. Without a shard: the first token drawn.
   */
  mint(shard?: number): ClickToken {
    for (;;) {
      const token = this.draw();
      if (shard === undefined || shardOfTokenHash(token.hash) === shard) return token;
    }
  }

  private draw(): ClickToken {
    const token = Buffer.allocUnsafe(CLICK_TOKEN_LENGTH);
    let length = 0;
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
