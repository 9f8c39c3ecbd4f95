import type { Response } from 'express';
import type { StoredAnswer } from '@linkservice/creation';
import { ApiError } from '../http/errors';
import type { FieldErrors } from '../http/errors';
import type {
  IdempotencyService,
  IdempotentCreation,
  IdempotentRequest,
} from './idempotency.service';

/** 1-255 printable ASCII characters (0x20-0x7E), as Stripe's keys: no control or 8-bit bytes. */
const IDEMPOTENCY_KEY = /^[\x20-\x7E]{1,255}$/;

const INVALID_KEY: FieldErrors = {
  'Idempotency-Key': 'must be 1-255 printable ASCII characters',
};

const REUSED_KEY: FieldErrors = {
  'Idempotency-Key': 'was already used with a different request (in the last 24 hours)',
};

/**
 * Sends a creation's answer: its exact JSON text, so a replay is byte for byte the first answer.
 * Only a replay carries Idempotent-Replayed; X-Request-Id stays this request's own.
 */
export function sendAnswer(res: Response, answer: StoredAnswer, replayed = false): void {
  res.status(answer.status).set(answer.headers);
  if (replayed) res.set('Idempotent-Replayed', 'true');
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(answer.body));
  res.end(answer.body);
}

export interface IdempotentCreationRequest
  extends Omit<IdempotentRequest, 'key'>, IdempotentCreation {
  /**
   * The header as Node hands it over, checked here (after authentication and the body, so a bad
   * body stays 400 `invalid_body`). An empty header arrives as '' (refused); leading and trailing
   * spaces and tabs are already dropped (so " a" and "a" are the same key); repeated headers
   * arrive joined with ", ".
   */
  key: string | string[];
  /**
   * The RateLimit-* headers of the limiter's state now, for the key's 422s: like every other
   * creation 422 they tell the caller where it stands. Read only on those refusals, so an
   * accepted key costs no extra Redis round trip.
   */
  limitHeaders: () => Promise<Record<string, string>>;
}

/** A creation sent with an Idempotency-Key: answered, replayed, or refused (422, 409). */
export async function answerWithIdempotencyKey(
  res: Response,
  idempotency: IdempotencyService,
  { key, limitHeaders, run, rebuild, ...request }: IdempotentCreationRequest,
): Promise<void> {
  if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
    throw keyRefused(INVALID_KEY, 'The Idempotency-Key header is invalid.', await limitHeaders());
  }
  const outcome = await idempotency.answer({ ...request, key }, { run, rebuild });
  switch (outcome.kind) {
    case 'answered':
      sendAnswer(res, outcome.answer, outcome.replayed);
      return;
    case 'key_reused':
      throw keyRefused(
        REUSED_KEY,
        'This Idempotency-Key was already used with a different request.',
        await limitHeaders(),
      );
    case 'in_progress':
      throw new ApiError(
        'conflict',
        'A request with this Idempotency-Key is still in progress; retry later.',
        { headers: { 'Retry-After': '1' } },
      );
  }
}

function keyRefused(fields: FieldErrors, message: string, headers: Record<string, string>) {
  return new ApiError('invalid_request', message, { fields, headers });
}
