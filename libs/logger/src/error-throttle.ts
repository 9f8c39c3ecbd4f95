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

/**
 * A log for errors a dependency repeats while it is down (BullMQ and ioredis emit one per
 * reconnect attempt and per blocked command, so a Redis outage would flood the log). The first
 * error is logged at once, and so is an error with a different message; the same message again
 * within `intervalMs` is only counted, and the next line after the interval carries
 * `repeated: n`, how many were held back since the previous line.
 */
export function throttledErrorLog(
  logger: Logger,
  { message, intervalMs = 30_000, level = 'warn', fields, now = Date.now }: ErrorLogThrottleOptions,
): (error: unknown) => void {
  let lastMessage: string | undefined;
  let lastLoggedAt = -Infinity;
  let heldBack = 0;
  return (error) => {
    const errorMessage = error instanceof Error ? error.message : String(error);
    const at = now();
    if (errorMessage === lastMessage && at - lastLoggedAt < intervalMs) {
      heldBack += 1;
      return;
    }
    logger[level]({ ...fields, err: error, ...(heldBack > 0 && { repeated: heldBack }) }, message);
    lastMessage = errorMessage;
    lastLoggedAt = at;
    heldBack = 0;
  };
}
