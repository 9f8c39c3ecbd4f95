import type { ClickDescription } from '../analytics/click-analytics';
import { isLinkIdField } from '../analytics/click-analytics';

/**
 * What waits in memory while Redis cannot take clicks: pure bookkeeping, no I/O and no clock
 * (callers pass `now`). ClickCounter decides which buffer a click goes to and does the Redis and
 * Postgres calls around them.
 */

/** One click to count, and the token minted with it. */
export interface Click {
  linkId: string;
  /** SHA-256 of the click token, base64url (see click-token-minter.ts). */
  tokenHash: string;
  /** The request's clock, epoch ms. */
  at: number;
  /** Its analytics (click-analytics.ts); null when analytics are off. */
  analytics: ClickDescription | null;
}

/** Bounded lists drop the oldest a tenth of the cap at a time, so dropping stays cheap. */
function overCap(length: number, max: number): number {
  return length > max ? length - Math.floor(max * 0.9) : 0;
}

/**
 * Clicks Redis certainly never counted (the call was not sent, or skipped during a backoff):
 * counted here per link, for a direct write to Postgres, and their tokens kept until Redis takes
 * them. At most `maxTokens` tokens wait (about 100 bytes each); during a long outage the oldest
 * go (they expire first anyway), while the clicks themselves are all still counted.
 */
export class UnrecordedClicks {
  private counts = new Map<string, number>();
  private tokens: Click[] = [];
  private droppedTokens = 0;

  constructor(private readonly maxTokens: number) {}

  add(click: Click): void {
    this.counts.set(click.linkId, (this.counts.get(click.linkId) ?? 0) + 1);
    if (click.analytics !== null) {
      // Counted like the pending hash counts it: the link's clicks and their dimensions apart.
      const field = click.linkId + click.analytics.dimensions;
      this.counts.set(field, (this.counts.get(field) ?? 0) + 1);
    }
    this.tokens.push(click);
    const excess = overCap(this.tokens.length, this.maxTokens);
    if (excess > 0) {
      this.tokens.splice(0, excess);
      this.droppedTokens += excess;
    }
  }

  /** Clicks not yet taken for Postgres (`takeCounts`). */
  get clickCount(): number {
    let count = 0;
    for (const [field, clicks] of this.counts) if (isLinkIdField(field)) count += clicks;
    return count;
  }

  /** Tokens waiting for Redis. */
  get tokenCount(): number {
    return this.tokens.length;
  }

  /**
   * The clicks per link id, and per link id and dimensions, as a batch of the pending hash holds
   * them, for one write to Postgres; counting starts afresh.
   */
  takeCounts(): Map<string, number> {
    const taken = this.counts;
    this.counts = new Map();
    return taken;
  }

  /** How many tokens the cap dropped since the last call (for one warning). */
  takeDroppedTokens(): number {
    const dropped = this.droppedTokens;
    this.droppedTokens = 0;
    return dropped;
  }

  /** Forgets the tokens expired at `now` (a token lives `ttlMs` from its click). */
  expireTokens(now: number, ttlMs: number): void {
    this.tokens = this.tokens.filter((click) => click.at + ttlMs > now);
  }

  /** The oldest `max` tokens, to hand to Redis; they wait until `tokensStored`. */
  nextTokens(max: number): Click[] {
    return this.tokens.slice(0, max);
  }

  /** These tokens are in Redis. By identity: tokens added (or capped) meanwhile are unaffected. */
  tokensStored(stored: readonly Click[]): void {
    if (stored.length === 0) return;
    const done = new Set(stored);
    this.tokens = this.tokens.filter((click) => !done.has(click));
  }
}

/**
 * Clicks whose Redis call failed uncertainly (a timeout, a connection lost in flight): it may have
 * counted them, or may still. They wait here to be reconciled with the idempotent count, never
 * written to Postgres. At most `max` wait; beyond it the oldest go (the closest to expiry).
 */
export class UncertainClicks {
  private waiting: Click[] = [];

  constructor(private readonly max: number) {}

  get count(): number {
    return this.waiting.length;
  }

  /** Adds a click; resolves with how many of the oldest the cap dropped for it. */
  add(click: Click): number {
    this.waiting.push(click);
    const excess = overCap(this.waiting.length, this.max);
    if (excess > 0) this.waiting.splice(0, excess);
    return excess;
  }

  /** Removes the clicks made at or before `deadline` (too late to reconcile); how many. */
  dropMadeBy(deadline: number): number {
    const before = this.waiting.length;
    this.waiting = this.waiting.filter((click) => click.at > deadline);
    return before - this.waiting.length;
  }

  /** The oldest `max` clicks, to reconcile; they wait until `settled`. */
  next(max: number): Click[] {
    return this.waiting.slice(0, max);
  }

  /** These clicks are reconciled. By identity: clicks added (or capped) meanwhile are unaffected. */
  settled(done: readonly Click[]): void {
    const set = new Set(done);
    this.waiting = this.waiting.filter((click) => !set.has(click));
  }

  /** Removes every waiting click; how many. */
  dropAll(): number {
    const count = this.waiting.length;
    this.waiting = [];
    return count;
  }
}
