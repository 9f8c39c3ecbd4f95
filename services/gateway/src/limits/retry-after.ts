/**
 * Whole seconds until a limiter's window ends, at least 1: what Retry-After and RateLimit-Reset
 * say (Retry-After: 0 would invite a retry storm). Both limits use it.
 */
export function retryAfterSeconds(msBeforeNext: number): number {
  return Math.max(Math.ceil(msBeforeNext / 1000), 1);
}
