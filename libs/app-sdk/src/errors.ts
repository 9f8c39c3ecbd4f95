import type { ServerErrorSlug } from './api-values.generated';

// The gateway's slugs come from the API document (`pnpm openapi` generates them).
export type { ServerErrorSlug } from './api-values.generated';

/**
 * Failures that never reached a gateway answer, with `status` 0: `network` (fetch rejected),
 * `timeout` (no answer within `timeoutMs`); and `unexpected_response`: an answer that is not the
 * gateway's JSON (a proxy's HTML error page, a cut body), with its real status.
 */
export type ClientErrorSlug = 'network' | 'timeout' | 'unexpected_response';

export type ErrorSlug = ServerErrorSlug | ClientErrorSlug;

export interface LinkServiceErrorInit {
  status: number;
  error: ErrorSlug;
  message: string;
  fields?: Record<string, string>;
  retryAfter?: number;
  requestId?: string;
  cause?: unknown;
}

/**
 * Every failure of a client call. Branch on `error` (the slug), not on `message`. Worth a retry
 * later: `rate_limited` and `unavailable` (after `retryAfter` seconds), `network`, `timeout`.
 */
export class LinkServiceError extends Error {
  /** HTTP status, or 0 when no answer came (`network`, `timeout`). */
  readonly status: number;
  readonly error: ErrorSlug;
  /** 422 `invalid_request`: field name -> what is wrong with it. */
  readonly fields: Record<string, string> | undefined;
  /** 429 and 503: seconds to wait before retrying (`Retry-After`). */
  readonly retryAfter: number | undefined;
  /** The answer's `X-Request-Id`: quote it when asking the service's operator about a failure. */
  readonly requestId: string | undefined;
  readonly cause: unknown;

  constructor(init: LinkServiceErrorInit) {
    super(init.message);
    this.name = 'LinkServiceError';
    this.status = init.status;
    this.error = init.error;
    this.fields = init.fields;
    this.retryAfter = init.retryAfter;
    this.requestId = init.requestId;
    this.cause = init.cause;
  }
}

export function isLinkServiceError(value: unknown): value is LinkServiceError {
  return value instanceof LinkServiceError;
}
