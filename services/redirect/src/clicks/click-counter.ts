import type { Redis } from 'ioredis';
import { clickTokenField, clickTokenValue } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { ClickKeys } from './click-keys';
import { throttled } from '../throttled';

/** One counted click and the token minted with it. */
export interface CountedClick {
  linkId: string;
  /** SHA-256 hex of the click token (see click-token.ts). */
  tokenHash: string;
  /** The request's clock, epoch ms. */
  at: number;
}

/** A click token waiting for its batch: click_tokens gets it with the batch's counts. */
export interface PendingToken {
  tokenHash: string;
  linkId: string;
  clickedAt: number;
}

/** Clicks Redis could not take, and their tokens. */
export interface UnrecordedClicks {
  counts: Map<string, number>;
  tokens: PendingToken[];
}

/**
 * Counts a redirect's click on the request path in the shared pending hash, never with a
 * database write: on a cache hit the link cache's lookup script does the HINCRBY on `pendingKey`
 * (and stores the click token) in the same round trip; otherwise `record` does both in one
 * MULTI. When Redis cannot take it, the click and its token are kept in memory and the flusher
 * writes them to Postgres itself, so an outage of Redis does not lose clicks (or their tokens)
 * of a process that keeps running.
 */
export class ClickCounter {
  private unrecorded: UnrecordedClicks = { counts: new Map(), tokens: [] };
  private readonly warn: (message: string, error: unknown) => void;

  constructor(
    private readonly redis: Redis,
    private readonly keys: ClickKeys,
    logger: Logger,
  ) {
    this.warn = throttled(10_000, (message, error) => {
      logger.warn({ err: error }, message);
    });
  }

  /**
   * The hash a click is counted in: link id -> clicks, and `t:<token hash>` -> `<linkId>
   * <clickedAtMs>` per token (see clickTokenField in @linkservice/link-cache).
   */
  get pendingKey(): string {
    return this.keys.pending;
  }

  async record({ linkId, tokenHash, at }: CountedClick): Promise<void> {
    try {
      // One round trip, and atomic: the token is in whichever batch takes the count.
      const results = await this.redis
        .multi()
        .hincrby(this.keys.pending, linkId, 1)
        .hset(this.keys.pending, clickTokenField(tokenHash), clickTokenValue(linkId, at))
        .exec();
      if (results === null) throw new Error('click transaction was aborted');
      const failed = results.find(([error]) => error !== null);
      if (failed?.[0]) throw failed[0];
    } catch (error) {
      const { counts, tokens } = this.unrecorded;
      counts.set(linkId, (counts.get(linkId) ?? 0) + 1);
      tokens.push({ tokenHash, linkId, clickedAt: at });
      this.warn('could not count a click in Redis; keeping it in memory', error);
    }
  }

  /** Hands the in-memory clicks and tokens to the flusher and starts afresh. */
  takeUnrecorded(): UnrecordedClicks {
    const taken = this.unrecorded;
    this.unrecorded = { counts: new Map(), tokens: [] };
    return taken;
  }
}
