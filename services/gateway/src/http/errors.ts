/** The closed set of error slugs clients branch on, and the one status each maps to. */
export const ERROR_STATUS = {
  invalid_body: 400,
  unauthorised: 401,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  /** A link that has expired: the app interface's resolve (app-interface.md), its QR code. */
  expired: 410,
  payload_too_large: 413,
  invalid_request: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
} as const satisfies Record<string, number>;

export type ErrorSlug = keyof typeof ERROR_STATUS;

/** Field name -> message, as in 422 `invalid_request` bodies. */
export type FieldErrors = Record<string, string>;

/** Every failure's body. `fields` only ever appears with `invalid_request`. */
export interface ErrorBody {
  error: ErrorSlug;
  message: string;
  fields?: FieldErrors;
}

export interface ApiErrorOptions {
  fields?: FieldErrors;
  /** Extra response headers, e.g. Retry-After, Allow, WWW-Authenticate, RateLimit-*. */
  headers?: Record<string, string>;
  cause?: unknown;
}

/**
 * An expected failure that ends the request with the error contract's body. Route handlers throw
 * it (express 5 forwards rejected promises to the error middleware); services return values and
 * leave the mapping to HTTP to the routes.
 */
export class ApiError extends Error {
  readonly status: number;
  readonly fields: FieldErrors | undefined;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    readonly slug: ErrorSlug,
    message: string,
    options: ApiErrorOptions = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'ApiError';
    this.status = ERROR_STATUS[slug];
    this.fields = options.fields;
    this.headers = options.headers ?? {};
  }

  toBody(): ErrorBody {
    return this.fields
      ? { error: this.slug, message: this.message, fields: this.fields }
      : { error: this.slug, message: this.message };
  }
}

/** Seconds a client should wait before retrying when Postgres, Redis or the workers are away. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

export const errors = {
  notFound: (message = 'No such resource.') => new ApiError('not_found', message),
  invalidBody: (message: string) => new ApiError('invalid_body', message),
  invalidRequest: (fields: FieldErrors, message = 'Some fields are invalid.') =>
    new ApiError('invalid_request', message, { fields }),
  conflict: (message: string) => new ApiError('conflict', message),
  unavailable: (
    message = 'The service is temporarily unavailable; retry shortly.',
    cause?: unknown,
  ) =>
    new ApiError('unavailable', message, {
      cause,
      headers: { 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
    }),
  internal: () => new ApiError('internal', 'Something went wrong on our side.'),
};
