import type { LinkServiceError, RequestKind } from '../src';
import {
  LinkServiceError as LinkServiceErrorCtor,
  isCreateOutcomeUnknown,
  retryAfterSeconds,
} from '../src';
import { backoffDelayMs, isRetryable, retryDelayMs } from '../src/retry';

const POLICY = { baseDelayMs: 500, maxDelayMs: 10_000 };

function errorOf(slug: LinkServiceError['slug'], status = 0): LinkServiceError {
  return new LinkServiceErrorCtor({ slug, status, message: slug });
}

describe('retryAfterSeconds', () => {
  it('reads delta seconds and HTTP dates, and nothing else', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterSeconds('7')).toBe(7);
    expect(retryAfterSeconds(' 0 ')).toBe(0);
    expect(retryAfterSeconds('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('Wed, 31 Dec 2025 23:59:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds(null)).toBeUndefined();
    expect(retryAfterSeconds('soon')).toBeUndefined();
    expect(retryAfterSeconds('-3')).toBeUndefined();
  });
});

describe('backoffDelayMs', () => {
  it('doubles each retry, half fixed and half jitter, up to the cap', () => {
    expect(backoffDelayMs(0, POLICY, () => 0)).toBe(250);
    expect(backoffDelayMs(0, POLICY, () => 1)).toBe(500);
    expect(backoffDelayMs(1, POLICY, () => 0)).toBe(500);
    expect(backoffDelayMs(2, POLICY, () => 0.5)).toBe(1500);
    expect(backoffDelayMs(10, POLICY, () => 1)).toBe(10_000);
    expect(backoffDelayMs(10, POLICY, () => 0)).toBe(5_000);
  });
});

describe('retryDelayMs', () => {
  it('never waits less than Retry-After, adding at most 10 % of it', () => {
    expect(retryDelayMs(0, 1, POLICY, () => 0)).toBe(1000);
    expect(retryDelayMs(0, 1, POLICY, () => 1)).toBe(1100);
    expect(retryDelayMs(3, 5, POLICY, () => 0.5)).toBe(5250);
  });

  it('keeps the jitter under the cap, and gives up on a Retry-After beyond it', () => {
    expect(retryDelayMs(0, 10, POLICY, () => 1)).toBe(10_000);
    expect(retryDelayMs(0, 11, POLICY, () => 0)).toBeUndefined();
    expect(retryDelayMs(0, 3600, POLICY, () => 0)).toBeUndefined();
  });

  it('backs off exponentially without (or with a zero) Retry-After', () => {
    expect(retryDelayMs(1, undefined, POLICY, () => 0)).toBe(500);
    expect(retryDelayMs(1, 0, POLICY, () => 0)).toBe(500);
  });
});

describe('isRetryable', () => {
  const kinds: RequestKind[] = ['read', 'keyed_create', 'unkeyed_create', 'write'];
  const table = (error: LinkServiceError) =>
    Object.fromEntries(kinds.map((kind) => [kind, isRetryable(error, kind)]));
  /** The table an error retried on exactly these kinds of request gives. */
  const retriedOn = (...retried: RequestKind[]) =>
    Object.fromEntries(kinds.map((kind) => [kind, retried.includes(kind)]));

  it('retries a 429 anywhere but on an unkeyed create: nothing was done', () => {
    expect(table(errorOf('rate_limited', 429))).toEqual(retriedOn('read', 'keyed_create', 'write'));
  });

  it('retries a 503 only where a repeat has the same effect (it may follow a commit)', () => {
    expect(table(errorOf('unavailable', 503))).toEqual(retriedOn('read', 'keyed_create'));
  });

  it('retries a lost answer only where a repeat has the same effect', () => {
    for (const error of [
      errorOf('network'),
      errorOf('timeout'),
      errorOf('unexpected_response', 502),
      errorOf('unexpected_response', 504),
    ]) {
      expect(table(error)).toEqual(retriedOn('read', 'keyed_create'));
    }
  });

  it('retries a conflict only on a keyed create (its first request is still running)', () => {
    expect(table(errorOf('conflict', 409))).toEqual(retriedOn('keyed_create'));
  });

  it('never retries an answer a repeat cannot change', () => {
    for (const error of [
      errorOf('invalid_body', 400),
      errorOf('unauthorised', 401),
      errorOf('not_found', 404),
      errorOf('method_not_allowed', 405),
      errorOf('payload_too_large', 413),
      errorOf('invalid_request', 422),
      errorOf('internal', 500),
      errorOf('unexpected_response', 404),
    ]) {
      expect(kinds.filter((kind) => isRetryable(error, kind))).toEqual([]);
    }
  });
});

describe('isCreateOutcomeUnknown', () => {
  it('is true where a failed create may still have created links', () => {
    const unknown = [
      errorOf('network'),
      errorOf('timeout'),
      errorOf('unexpected_response', 502),
      errorOf('conflict', 409),
      // The same 503 answers "Postgres could not settle a creation the worker may have made".
      errorOf('unavailable', 503),
      errorOf('internal', 500),
    ];
    const nothingCreated = [
      errorOf('rate_limited', 429),
      errorOf('invalid_request', 422),
      errorOf('invalid_body', 400),
      errorOf('unauthorised', 401),
      errorOf('payload_too_large', 413),
    ];
    expect(unknown.filter((error) => !isCreateOutcomeUnknown(error))).toEqual([]);
    expect(nothingCreated.filter((error) => isCreateOutcomeUnknown(error))).toEqual([]);
  });
});
