import type { Level, Logger } from 'pino';

export interface ErrorLogThrottleOptions {
  /** The line's message, e.g. 'creation queue: redis error'. */
  message: string;
  /** At most one line per message per interval; 30 s unless told. */
  intervalMs?: number;
  level?: Level;
  /** Extra fields on every line (which client, which queue). */
  fields?: Record<string, unknown>;
  now?: () => number;
}

/** Distinct error messages remembered per log; an outage repeats a handful, not more. */
const MAX_MESSAGES = 32;

/**
 * A log for errors a dependency repeats while it is down (BullMQ and ioredis emit one per
 * reconnect attempt and per blocked command, so a Redis outage would flood the log). Each
 * distinct error message is logged at once the first time; the same message again within
 * `intervalMs` of its last line is only counted, and its next line after the interval carries
 * `repeated: n`, how many were held back since. Messages are throttled apart, so two errors that
 * alternate through an outage (ECONNREFUSED, "Connection is closed.") are each held back too.
 */
export function throttledErrorLog(
  logger: Logger,
  { message, intervalMs = 30_000, level = 'warn', fields, now = Date.now }: ErrorLogThrottleOptions,
): (error: unknown) => void {
  const seen = new Map<string, { loggedAt: number; heldBack: number }>();
  return (error) => {
    const errorMessage = error instanceof Error ? error.message : String(error);
    const at = now();
    const last = seen.get(errorMessage);
    if (last && at - last.loggedAt < intervalMs) {
      last.heldBack += 1;
      return;
    }
    const heldBack = last?.heldBack ?? 0;
    logger[level]({ ...fields, err: error, ...(heldBack > 0 && { repeated: heldBack }) }, message);
    // Re-inserted, so the Map's first key is the message logged longest ago: the one to forget.
    seen.delete(errorMessage);
    seen.set(errorMessage, { loggedAt: at, heldBack: 0 });
    if (seen.size > MAX_MESSAGES) seen.delete(seen.keys().next().value as string);
  };
}
