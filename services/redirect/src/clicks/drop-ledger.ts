/** Why clicks were dropped, for the warning that counts them. */
export type DropReason = 'token expired before Redis answered' | 'too many waited' | 'shutdown';

/** One `clicks_dropped` warning's fields. */
export interface DropReport {
  /** Every click dropped since start. */
  clicks_dropped: number;
  /** Those dropped since the previous warning. */
  clicks: number;
  reason: DropReason | undefined;
}

/** Drop-warnings at most this often; each carries the running total. */
export const DROP_WARNING_INTERVAL_MS = 10_000;

/**
 * The clicks dropped because it was uncertain whether Redis counted them and they could not be
 * reconciled in time (`clicks_dropped`), and when they are due in a warning: the first at once,
 * later ones at most once per DROP_WARNING_INTERVAL_MS, and the last word at shutdown whatever
 * the interval, so no drop goes unlogged. Pure: callers pass the clock and log what it returns.
 */
export class DropLedger {
  private dropped = 0;
  private reported = 0;
  private lastReport = -Infinity;
  private lastReason: DropReason | undefined;

  /** Clicks dropped since start. */
  get total(): number {
    return this.dropped;
  }

  /** Records `count` dropped clicks; the warning due at `now`, if any. */
  drop(count: number, reason: DropReason, now: number): DropReport | null {
    if (count <= 0) return null;
    this.dropped += count;
    this.lastReason = reason;
    return this.due(now);
  }

  /** The warning due at `now`: drops not yet reported, once the interval since the last passed. */
  due(now: number): DropReport | null {
    if (now - this.lastReport < DROP_WARNING_INTERVAL_MS) return null;
    const report = this.unreported();
    if (report) this.lastReport = now;
    return report;
  }

  /** Every drop not yet reported, whatever the interval (the last word at shutdown). */
  unreported(): DropReport | null {
    if (this.dropped === this.reported) return null;
    const report = {
      clicks_dropped: this.dropped,
      clicks: this.dropped - this.reported,
      reason: this.lastReason,
    };
    this.reported = this.dropped;
    return report;
  }
}
