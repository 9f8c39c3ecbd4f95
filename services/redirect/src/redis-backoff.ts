/**
 * After a Redis call on the request path failed uncertainly (a timeout: Redis frozen, or a
 * connection lost in flight), requests skip Redis for `windowMs`, then try it again: a Redis that
 * does not answer costs one command timeout per window, not one per redirect. Requests in the
 * window fall back as they would with Redis disconnected (their clicks were certainly not sent).
 */
export class RedisBackoff {
  private skipUntil = -Infinity;

  constructor(
    readonly windowMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  /** Whether a request may call Redis now. */
  allows(now = this.clock()): boolean {
    return now >= this.skipUntil;
  }

  /** A call failed uncertainly: skip Redis for a window from now. */
  trip(now = this.clock()): void {
    this.skipUntil = Math.max(this.skipUntil, now + this.windowMs);
  }
}
