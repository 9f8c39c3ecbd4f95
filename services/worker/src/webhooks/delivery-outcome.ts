import { retryDelayMs } from '@linkservice/webhooks';

/**
 * What one delivery attempt came to. `http_error`: any answer but 2xx and 410, redirects
 * included (never followed); `gone`: 410, which also disables the endpoint; `refused_address`:
 * the URL's host resolved to an address webhooks may not reach (nothing was sent);
 * `unresolvable`: its host did not resolve.
 */
export const ATTEMPT_OUTCOMES = [
  'succeeded',
  'http_error',
  'gone',
  'timeout',
  'network_error',
  'refused_address',
  'unresolvable',
] as const;

export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** The outcome of an attempt that got an answer with this status code. */
export function outcomeOfStatus(status: number): AttemptOutcome {
  if (status >= 200 && status < 300) return 'succeeded';
  return status === 410 ? 'gone' : 'http_error';
}

/** Where a delivery stands after an attempt. */
export type NextDeliveryState =
  { status: 'delivered' } | { status: 'pending'; retryDelayMs: number } | { status: 'failed' };

/**
 * A delivery after its attempt number `attempt` (from 1) came to `outcome`: delivered on
 * success; else due again after the schedule's next delay, or failed once the schedule ran out.
 * A 410 is a failure like the others for the delivery: its endpoint is disabled, and the
 * delivery waits for it to be enabled again.
 */
export function nextDeliveryState(
  outcome: AttemptOutcome,
  attempt: number,
  schedule: readonly number[],
): NextDeliveryState {
  if (outcome === 'succeeded') return { status: 'delivered' };
  const delay = retryDelayMs(schedule, attempt);
  return delay === undefined ? { status: 'failed' } : { status: 'pending', retryDelayMs: delay };
}
