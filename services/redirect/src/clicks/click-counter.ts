import type { Redis } from 'ioredis';
import { clickTokenKey, clickTokenValue } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { ClickKeys } from './click-keys';
import { throttled } from '../throttled';

/**
 * At most this many click tokens wait in memory for Redis (about 100 bytes each): during a long
 * outage the oldest are dropped, while the clicks themselves are still counted.
 */
const MAX_UNTOKENED = 100_000;
/** Tokens handed back to Redis per round trip once it answers again. */
const UNTOKENED_PER_PIPELINE = 1_000;

/** One counted click and the token minted with it. */
export interface CountedClick {
  linkId: string;
  /** SHA-256 of the click token, base64url (see click-token.ts). */
  tokenHash: string;
  /** The request's clock, epoch ms. */
  at: number;
}

export interface ClickCounterOptions {
  redis: Redis;
  keys: ClickKeys;
  /** REDIS_PREFIX: click tokens are stored under it (`clickTokenKey`). */
  redisPrefix: string;
  /** CLICK_TOKEN_TTL_SECONDS, in ms: a token's key expires this long after its click. */
  tokenTtlMs: number;
  logger: Logger;
  /** At most this many tokens wait in memory for Redis; MAX_UNTOKENED unless a test says. */
  maxUntokened?: number;
}

/**
 * Counts a redirect's click on the request path in the shared pending hash, never with a
 * database write, and stores the click token minted with it: on a cache hit the link cache's
 * lookup script does both in the same round trip; otherwise `record` does both in one MULTI.
 * When Redis cannot take them, the click and its token are kept in memory: the flusher writes
 * the click to Postgres itself and hands the token back to Redis once it answers (while the
 * token is still within its time), so an outage of Redis loses neither for a process that keeps
 * running.
 */
export class ClickCounter {
  private unrecorded = new Map<string, number>();
  private untokened: CountedClick[] = [];
  /** Tokens dropped because too many waited for Redis (logged by storeUntokened). */
  private dropped = 0;
  private readonly warn: (message: string, error: unknown) => void;

  constructor(private readonly options: ClickCounterOptions) {
    this.warn = throttled(10_000, (message, error) => {
      options.logger.warn({ err: error }, message);
    });
  }

  /** The hash a click is counted in (link id -> clicks). */
  get pendingKey(): string {
    return this.options.keys.pending;
  }

  /** How long a click token is kept (the lookup script's `click.tokenTtlMs`). */
  get tokenTtlMs(): number {
    return this.options.tokenTtlMs;
  }

  /** Where a click token is stored, and for how long. */
  private tokenTarget(tokenHash: string): { key: string; ttlMs: number } {
    return {
      key: clickTokenKey(this.options.redisPrefix, tokenHash),
      ttlMs: this.options.tokenTtlMs,
    };
  }

  async record(click: CountedClick): Promise<void> {
    const { redis, keys } = this.options;
    const token = this.tokenTarget(click.tokenHash);
    try {
      // One round trip for both, and atomic: a counted click always has its token.
      const results = await redis
        .multi()
        .hincrby(keys.pending, click.linkId, 1)
        .set(
          token.key,
          clickTokenValue({ linkId: click.linkId, clickedAt: click.at }),
          'PX',
          token.ttlMs,
        )
        .exec();
      if (results === null) throw new Error('click transaction was aborted');
      const failed = results.find(([error]) => error !== null);
      if (failed?.[0]) throw failed[0];
    } catch (error) {
      this.unrecorded.set(click.linkId, (this.unrecorded.get(click.linkId) ?? 0) + 1);
      this.untokened.push(click);
      const max = this.options.maxUntokened ?? MAX_UNTOKENED;
      if (this.untokened.length > max) {
        // A long outage: the oldest tokens go first (they expire first anyway), a tenth at a
        // time so that dropping stays cheap; the clicks themselves are all still counted.
        const excess = this.untokened.length - Math.floor(max * 0.9);
        this.untokened.splice(0, excess);
        this.dropped += excess;
      }
      this.warn('could not count a click in Redis; keeping it in memory', error);
    }
  }

  /** Click tokens waiting for Redis (storeUntokened). */
  get untokenedCount(): number {
    return this.untokened.length;
  }

  /** Hands the in-memory clicks to the flusher and starts afresh. */
  takeUnrecorded(): Map<string, number> {
    const taken = this.unrecorded;
    this.unrecorded = new Map();
    return taken;
  }

  /**
   * Stores the tokens Redis could not take when their clicks were counted, with what is left of
   * their time; expired ones are dropped. Those Redis still refuses stay for the next call.
   * Resolves with how many are still waiting.
   */
  async storeUntokened(now = Date.now()): Promise<number> {
    if (this.dropped > 0) {
      this.options.logger.warn(
        { tokens: this.dropped },
        'click tokens dropped: too many waited for Redis',
      );
      this.dropped = 0;
    }
    this.untokened = this.untokened.filter((click) => click.at + this.options.tokenTtlMs > now);
    const { redis } = this.options;
    // Not connected: no pipeline is built for it to refuse; the next pass tries again.
    if (redis.status !== 'ready') return this.untokened.length;
    while (this.untokened.length > 0) {
      const chunk = this.untokened.slice(0, UNTOKENED_PER_PIPELINE);
      const pipeline = redis.pipeline();
      for (const click of chunk) {
        const token = this.tokenTarget(click.tokenHash);
        const value = clickTokenValue({ linkId: click.linkId, clickedAt: click.at });
        pipeline.set(token.key, value, 'PX', click.at + token.ttlMs - now);
      }
      const results = await pipeline.exec().catch(() => null);
      const refused = chunk.filter((_click, index) => results?.[index]?.[0] !== null);
      // Tokens minted meanwhile were appended behind the chunk: the oldest stay first.
      this.untokened = [...refused, ...this.untokened.slice(chunk.length)];
      if (refused.length > 0) break;
    }
    return this.untokened.length;
  }
}
