import type { ErrorSlug, LinkServiceError, RateLimitInfo } from './errors';
import { LinkServiceError as LinkServiceErrorCtor } from './errors';
import { retryAfterSeconds } from './retry';
import type { ApiErrorSlug } from './types';
import { ERROR_STATUS } from './types';

/** Response headers as the client reads them; fetch's `Headers` fits. */
export interface HeadersLike {
  get(name: string): string | null;
}

/**
 * What the client reads of a caller's `AbortSignal` (`RequestOptions.signal`); the platform's
 * own fits. Written out because the public types may name no DOM or Node type: a consumer
 * compiling without either (`lib: ["ES2020"]`, `types: []`) must still compile them.
 */
export interface AbortSignalLike {
  readonly aborted: boolean;
  /** Why it aborted (`abort(reason)`); older runtimes have none. */
  readonly reason?: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * The signal the client hands to `fetch`: the runtime's `AbortSignal` where the consumer's
 * types declare one (DOM lib, `@types/node`, Deno, Bun), so that the global `fetch` is a
 * `FetchLike`; `AbortSignalLike` where they declare none. Resolved in the consumer's
 * compilation, not the client's.
 */
export type FetchSignal = typeof globalThis extends { AbortSignal: { prototype: infer S } }
  ? S
  : AbortSignalLike;

/**
 * What the client needs of `fetch`; the global one of Node 18+, Deno, Bun, workers and browsers
 * fits, and so does a wrapper around any other HTTP stack.
 */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal: FetchSignal },
) => Promise<{
  status: number;
  headers: HeadersLike;
  text(): Promise<string>;
  /**
   * The body's bytes: only `getLinkQr` with `format: 'png'` reads it (fetch's own has it). A
   * wrapper without it serves every other method.
   */
  arrayBuffer?(): Promise<ArrayBuffer>;
}>;

/** What the gateway's headers tell about an answer, success or failure. */
export interface AnswerInfo {
  /** `X-Request-Id`: quote it when asking the service's operator about a call. */
  requestId: string | undefined;
  /** `RateLimit-*` of a creation answer. */
  rateLimit: RateLimitInfo | undefined;
  /** `Idempotent-Replayed: true`: the answer of an earlier request with the same key. */
  replayed: boolean;
  /** `Retry-After` in seconds. */
  retryAfter: number | undefined;
}

/** A 2xx answer with a JSON object body (none on a 204). */
export interface Answer<T> extends AnswerInfo {
  status: number;
  body: T;
}

const API_SLUGS: ReadonlySet<string> = new Set(Object.keys(ERROR_STATUS));

function isApiSlug(value: unknown): value is ApiErrorSlug {
  return typeof value === 'string' && API_SLUGS.has(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStringRecord(value: unknown): value is Record<string, string> {
  return isObject(value) && Object.values(value).every((member) => typeof member === 'string');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function wholeNumber(value: string | null): number | undefined {
  return value !== null && /^\s*\d+\s*$/.test(value) ? Number(value) : undefined;
}

/** `RateLimit-Limit`, `-Remaining` and `-Reset`, when all three are there and numbers. */
export function rateLimitOf(headers: HeadersLike): RateLimitInfo | undefined {
  const limit = wholeNumber(headers.get('ratelimit-limit'));
  const remaining = wholeNumber(headers.get('ratelimit-remaining'));
  const resetSeconds = wholeNumber(headers.get('ratelimit-reset'));
  if (limit === undefined || remaining === undefined || resetSeconds === undefined) {
    return undefined;
  }
  return { limit, remaining, resetSeconds };
}

export function answerInfoOf(headers: HeadersLike, now = Date.now()): AnswerInfo {
  return {
    requestId: headers.get('x-request-id') ?? undefined,
    rateLimit: rateLimitOf(headers),
    replayed: headers.get('idempotent-replayed')?.trim().toLowerCase() === 'true',
    retryAfter: retryAfterSeconds(headers.get('retry-after'), now),
  };
}

/**
 * The gateway's answer as a value (2xx with a JSON object, or a 204) or, for anything else, the
 * `LinkServiceError` to throw: the body's slug when it is one of the contract's, else
 * `unexpected_response` (a proxy's page, a cut body).
 */
export function readAnswer<T>(
  status: number,
  text: string,
  headers: HeadersLike,
  attempts: number,
): Answer<T> | LinkServiceError {
  const info = answerInfoOf(headers);
  // No Content (a deletion): success without a body.
  if (status === 204) return { status, body: undefined as T, ...info };
  const body = parseJson(text);
  if (status >= 200 && status < 300 && isObject(body)) {
    // Trusted as the contract's shape: the client carries no schema library (zero dependencies).
    return { status, body: body as T, ...info };
  }
  const common = { status, attempts, ...info };
  if (
    status >= 400 &&
    isObject(body) &&
    isApiSlug(body.error) &&
    typeof body.message === 'string'
  ) {
    return new LinkServiceErrorCtor({
      ...common,
      slug: body.error,
      message: body.message,
      fields: isStringRecord(body.fields) ? body.fields : undefined,
      allow: headers
        .get('allow')
        ?.split(',')
        .map((method) => method.trim())
        .filter((method) => method !== ''),
    });
  }
  const slug: ErrorSlug = 'unexpected_response';
  return new LinkServiceErrorCtor({
    ...common,
    slug,
    message: `unexpected answer from the gateway (HTTP ${status})`,
  });
}
