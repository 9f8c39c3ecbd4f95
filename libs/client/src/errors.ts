import type { ApiErrorSlug } from './types';

/**
 * Failures without a gateway answer to read, the client's own slugs: `network` (fetch rejected:
 * refused, reset, DNS) and `timeout` (no answer within `timeoutMs`), both with status 0; and
 * `unexpected_response`, an answer that is not the gateway's JSON (a proxy's 502 page, a cut
 * body, a slug this version does not know), with its real status.
 */
export type ClientErrorSlug = 'network' | 'timeout' | 'unexpected_response';

export type ErrorSlug = ApiErrorSlug | ClientErrorSlug;

/** The `RateLimit-*` headers of a creation answer: pace yourself before a 429. */
export interface RateLimitInfo {
  /** Creations per window (hour) for the app. */
  limit: number;
  /** Creations left in this window. */
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

/** What every `LinkServiceError` carries, whatever its slug (documented on the class below). */
export type LinkServiceErrorCommon = Error &
  Pick<
    LinkServiceErrorClass,
    'name' | 'status' | 'requestId' | 'retryAfter' | 'rateLimit' | 'replayed' | 'attempts' | 'cause'
  >;

/** Members only some slugs carry. */
interface ErrorExtras {
  invalid_request: {
    /**
     * Field name -> what is wrong with it; empty when the body had none, which the contract
     * answers only when the plan's link allowance is reached (see `planLimitReached`).
     */
    readonly fields: Readonly<Record<string, string>>;
    /** A 422 without `fields`: the request is fine, the app's plan allowance is used up. */
    readonly planLimitReached: boolean;
  };
  method_not_allowed: {
    /** The methods the path takes (`Allow`). */
    readonly allow: readonly string[];
  };
}

/** The error of one slug: `LinkServiceError` narrowed by `slug`. */
export type LinkServiceErrorOf<S extends ErrorSlug> = LinkServiceErrorCommon & {
  readonly slug: S;
} & (S extends keyof ErrorExtras ? ErrorExtras[S] : unknown);

/**
 * Every failure of a client call, a union by `slug`: `switch (error.slug)` narrows it, e.g.
 * `fields` on `invalid_request`. Branch on the slug, never on `message` (for people).
 */
export type LinkServiceError = { [S in ErrorSlug]: LinkServiceErrorOf<S> }[ErrorSlug];

export interface LinkServiceErrorInit {
  slug: ErrorSlug;
  status: number;
  message: string;
  fields?: Record<string, string>;
  allow?: readonly string[];
  retryAfter?: number;
  rateLimit?: RateLimitInfo;
  requestId?: string;
  replayed?: boolean;
  attempts?: number;
  cause?: unknown;
}

/** The one runtime class behind the union; its members are the union's, unnarrowed. */
class LinkServiceErrorClass extends Error {
  override readonly name = 'LinkServiceError';
  readonly slug: ErrorSlug;
  /** HTTP status; 0 when no answer came (`network`, `timeout`). */
  readonly status: number;
  readonly fields: Readonly<Record<string, string>> | undefined;
  readonly planLimitReached: boolean | undefined;
  readonly allow: readonly string[] | undefined;
  /** The answer's `X-Request-Id`: quote it when asking the service's operator about a failure. */
  readonly requestId: string | undefined;
  /**
   * Seconds to wait before trying again, from `Retry-After` (429 `rate_limited`, 503
   * `unavailable`, 409 `conflict` of an Idempotency-Key still in progress); undefined otherwise.
   */
  readonly retryAfter: number | undefined;
  /** `RateLimit-*` of a creation answer, when it carried them. */
  readonly rateLimit: RateLimitInfo | undefined;
  /** The gateway replayed this answer for a repeated Idempotency-Key (`Idempotent-Replayed`). */
  readonly replayed: boolean;
  /** How many attempts were made before giving up (1 when there was no retry). */
  readonly attempts: number;
  /** The underlying error of `network`/`timeout` (fetch's), undefined otherwise. */
  readonly cause: unknown;

  constructor(init: LinkServiceErrorInit) {
    super(init.message);
    this.slug = init.slug;
    this.status = init.status;
    if (init.slug === 'invalid_request') {
      this.fields = init.fields ?? {};
      this.planLimitReached = init.fields === undefined;
    }
    if (init.slug === 'method_not_allowed') this.allow = init.allow ?? [];
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
    this.rateLimit = init.rateLimit;
    this.replayed = init.replayed ?? false;
    this.attempts = init.attempts ?? 1;
    this.cause = init.cause;
  }
}

/**
 * `new LinkServiceError(init)` builds one; `error instanceof LinkServiceError` narrows to the
 * union, so a following `error.slug === 'invalid_request'` reaches `error.fields`. (`prototype`
 * is typed as the union, which is what `instanceof` narrows to.)
 */
export interface LinkServiceErrorConstructor {
  new (init: LinkServiceErrorInit): LinkServiceError;
  readonly prototype: LinkServiceError;
}

export const LinkServiceError = LinkServiceErrorClass as unknown as LinkServiceErrorConstructor;

/** Whether `value` is a client error, optionally of one slug. */
export function isLinkServiceError(value: unknown): value is LinkServiceError;
export function isLinkServiceError<S extends ErrorSlug>(
  value: unknown,
  slug: S,
): value is LinkServiceErrorOf<S>;
export function isLinkServiceError(value: unknown, slug?: ErrorSlug): boolean {
  return value instanceof LinkServiceErrorClass && (slug === undefined || value.slug === slug);
}

/**
 * Whether a create (`createLink`, `createLinks`, a chunk of `createLinksInBatches`) that failed
 * with `error` may still have created links. True when no answer came (`network`, `timeout`),
 * when the answer was not the gateway's (`unexpected_response`: a proxy may have cut off a
 * gateway that went on), when the first request with the same Idempotency-Key was still running
 * (`conflict`), and for `unavailable` and `internal`: the gateway also answers 503 when Postgres
 * could not settle a creation the worker may have committed, with the same body as a 503 that
 * created nothing, and a 500 can come after the creation. False for answers that say nothing was
 * created (`rate_limited`, `invalid_request`, `invalid_body`, …). Repeat such a create under the
 * same Idempotency-Key (and body) to learn its outcome without creating twice.
 */
export function isCreateOutcomeUnknown(error: LinkServiceError): boolean {
  return CREATE_OUTCOME_UNKNOWN[error.slug];
}

const CREATE_OUTCOME_UNKNOWN: Readonly<Record<ErrorSlug, boolean>> = {
  network: true,
  timeout: true,
  unexpected_response: true,
  conflict: true,
  unavailable: true,
  internal: true,
  invalid_body: false,
  unauthorised: false,
  not_found: false,
  expired: false,
  method_not_allowed: false,
  payload_too_large: false,
  invalid_request: false,
  rate_limited: false,
};
