import type { Redis } from 'ioredis';
import type { Logger } from '@linkservice/logger';
import type { ClickKeys } from './click-keys';
import { throttled } from '../throttled';

/**
 * Counts a redirect's click on the request path in the shared pending hash, never with a
 * database write: on a cache hit the link cache's lookup script does the HINCRBY on `pendingKey`
 * in the same round trip; otherwise `record` does it. When Redis cannot take it, the click is kept in memory and the
 * flusher writes it to Postgres itself, so an outage of Redis does not lose clicks of a
 * process that keeps running.
 */
export class ClickCounter {
  private unrecorded = new Map<string, number>();
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

  /** The hash a click is counted in (link id -> clicks). */
  get pendingKey(): string {
    return this.keys.pending;
  }

  async record(linkId: string): Promise<void> {
    try {
      await this.redis.hincrby(this.keys.pending, linkId, 1);
    } catch (error) {
      this.unrecorded.set(linkId, (this.unrecorded.get(linkId) ?? 0) + 1);
      this.warn('could not count a click in Redis; keeping it in memory', error);
    }
  }

  /** Hands the in-memory clicks to the flusher and starts afresh. */
  takeUnrecorded(): Map<string, number> {
    const taken = this.unrecorded;
    this.unrecorded = new Map();
    return taken;
  }
}
