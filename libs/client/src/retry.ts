import type { LinkServiceError } from './errors';

/** How a call retries. Every member has a default (`DEFAULT_RETRY_POLICY`). */
export interface RetryPolicy {
  /** Retries after the first attempt; 0 turns retrying off. */
  maxRetries: number;
  /** The first backoff step; each further retry doubles it (before jitter and the cap). */
  baseDelayMs: number;
  /**
   * The longest the client waits before one retry. A `Retry-After` longer than this is not
   * waited out: the call fails at once with the error and its `retryAfter`, and the caller
   * decides (an hourly creation limit can ask for most of an hour).
   */
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxRetries: 2,
  baseDelayMs: 500,
  maxDelayMs: 10_000,
});

/**
 * What repeating a request can do, which decides what may be retried:
 * - `read`: a GET; repeating it changes nothing.
 * - `keyed_create`: a POST with an Idempotency-Key; the gateway answers a repeat with the first
 *   one's answer, so a repeat never creates twice.
 * - `unkeyed_create`: a POST without a key; a repeat after a lost answer could create a second
 *   link (generated alias) or answer 422 "alias in use" for the caller's own link. Never retried.
 * - `write`: PATCH and DELETE; retried only on 429, the one answer that says nothing was done.
 *   Not on a 503: the gateway also answers 503 when the database failed after the change may
 *   have been committed (a lost commit acknowledgement), and then a repeated DELETE answers 409,
 *   hiding that the first one archived the link, and a repeated PATCH could undo someone else's
 *   change made in between. Nor after a lost answer, for the same reasons.
 */
export type RequestKind = 'read' | 'keyed_create' | 'unkeyed_create' | 'write';

/** Statuses a proxy in front of the gateway answers while it is away (its own HTML or JSON). */
const GATEWAY_AWAY = new Set([502, 503, 504]);

/** Whether `error` is worth another attempt of a request of `kind`. */
export function isRetryable(error: LinkServiceError, kind: RequestKind): boolean {
  if (kind === 'unkeyed_create') return false;
  const outcomeUnknownSafe = kind === 'read' || kind === 'keyed_create';
  switch (error.slug) {
    // The gateway did nothing and said when to come back.
    case 'rate_limited':
      return true;
    // Said "retry", but a 503 can also come after a commit whose acknowledgement was lost (and,
    // on a create, after links were made): only safe where a repeat has the same effect.
    case 'unavailable':
      return outcomeUnknownSafe;
    // On a keyed create: the first request with this key is still running; its answer will be
    // replayed. Anywhere else a conflict is about the link's state, which a retry cannot change.
    case 'conflict':
      return kind === 'keyed_create';
    // No answer: the request may or may not have been carried out.
    case 'network':
    case 'timeout':
      return outcomeUnknownSafe;
    case 'unexpected_response':
      return outcomeUnknownSafe && GATEWAY_AWAY.has(error.status);
    case 'invalid_body':
    case 'unauthorised':
    case 'not_found':
    case 'expired':
    case 'method_not_allowed':
    case 'payload_too_large':
    case 'invalid_request':
    case 'internal':
      return false;
  }
}

/**
 * Seconds of a `Retry-After` value (delta seconds or an HTTP date), or undefined when it is
 * missing or unreadable.
 */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  // HTTP dates start with the day's name; Date.parse alone would take '-3' for a year.
  if (!/^[A-Za-z]{3}/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/**
 * Exponential backoff with "equal jitter": half of the step is fixed, half random, so retries of
 * many clients spread out yet none comes back at once. `retry` is 0 for the first retry.
 */
export function backoffDelayMs(
  retry: number,
  policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>,
  random: () => number = Math.random,
): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.round(step / 2 + random() * (step / 2));
}

/**
 * How long to wait before retry number `retry` (0-based), or undefined when the server asks for
 * longer than `maxDelayMs`. A `Retry-After` is a floor, never shortened; up to 10 % is added on
 * top so that clients told the same instant do not all return at it.
 */
export function retryDelayMs(
  retry: number,
  retryAfter: number | undefined,
  policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>,
  random: () => number = Math.random,
): number | undefined {
  if (retryAfter === undefined || retryAfter <= 0) return backoffDelayMs(retry, policy, random);
  const floor = retryAfter * 1000;
  if (floor > policy.maxDelayMs) return undefined;
  return Math.round(Math.min(policy.maxDelayMs, floor + random() * floor * 0.1));
}
