export interface EventuallyOptions {
  /** Fail after this long; default 10 s. */
  timeoutMs?: number;
  /** Pause between checks; default 25 ms. */
  intervalMs?: number;
  /** Names the condition in the failure message. */
  what?: string;
}

/**
 * Polls `check` until it returns something other than `undefined` or `false`, and returns that;
 * fails at the deadline. For effects no event announces (a row written by another process, a
 * timer that ran out), so tests never sleep a fixed time and hope.
 */
export async function eventually<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  { timeoutMs = 10_000, intervalMs = 25, what = 'condition' }: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
