import { ApiError } from '../http/errors';
import type { CreationLimitState } from '../limits/creation-limiter';

/** RateLimit-* on every creation answer, so clients can pace themselves before a 429. */
export function limitHeaders(limit: CreationLimitState): Record<string, string> {
  return {
    'RateLimit-Limit': String(limit.limit),
    'RateLimit-Remaining': String(limit.remaining),
    'RateLimit-Reset': String(limit.resetSeconds),
  };
}

/** Whole seconds until the window resets, never 0: "retry now" would only meet another 429. */
export function retryAfter(limit: CreationLimitState): string {
  return String(Math.max(limit.resetSeconds, 1));
}

/** The 429 of a creation over the app's hourly limit. */
export function rateLimited(limit: CreationLimitState): ApiError {
  const seconds = retryAfter(limit);
  return new ApiError(
    'rate_limited',
    `This app has used its ${limit.limit} link creations for this hour; retry in ${seconds} seconds.`,
    { headers: { 'Retry-After': seconds } },
  );
}
