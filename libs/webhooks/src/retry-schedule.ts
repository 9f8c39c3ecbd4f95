/**
 * Standard Webhooks' retry schedule: the delay before each attempt, the first immediately; a
 * delivery whose last attempt fails is `failed`. WEBHOOK_RETRY_SCHEDULE overrides it (tests).
 */
export const STANDARD_RETRY_SCHEDULE_SECONDS = [0, 5, 300, 1800, 7200, 18000, 36000, 36000];

/** An endpoint that has failed every attempt for this long is disabled. */
export const DISABLE_AFTER_FAILING_MS = 5 * 24 * 3600 * 1000;

/**
 * When attempt `attempts + 1` is due after `attempts` failed ones, as a delay from now in ms;
 * undefined when the schedule has run out.
 */
export function retryDelayMs(schedule: readonly number[], attempts: number): number | undefined {
  return attempts < schedule.length ? schedule[attempts] * 1000 : undefined;
}
