import type { Request, Response } from 'express';
import type { CreateLinksResult, StoredAnswer } from '@linkservice/creation';
import { ApiError, errors } from '../http/errors';
import type {
  CreationRun,
  IdempotencyService,
  IdempotentEndpoint,
  IdempotentRequest,
} from './idempotency.service';

/** 1-255 printable ASCII characters (0x20-0x7E), as Stripe's keys: no control or 8-bit bytes. */
const IDEMPOTENCY_KEY = /^[\x20-\x7E]{1,255}$/;

/**
 * The request's Idempotency-Key, undefined without the header. Read in the handler, so after
 * authentication and after the body (a bad body stays 400 `invalid_body`). Node hands an empty
 * header through as '' (refused here); repeated headers arrive joined with ", ".
 */
export function idempotencyKeyOf(req: Request): string | undefined {
  const value = req.headers['idempotency-key'];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !IDEMPOTENCY_KEY.test(value)) {
    throw errors.invalidRequest(
      { 'Idempotency-Key': 'must be 1-255 printable ASCII characters' },
      'The Idempotency-Key header is invalid.',
    );
  }
  return value;
}

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

export interface IdempotentCreationRequest extends Omit<IdempotentRequest, 'endpoint'> {
  endpoint: IdempotentEndpoint;
  run: (creationRequestId: string) => Promise<CreationRun>;
  rebuild: (results: CreateLinksResult) => Promise<StoredAnswer>;
}

/** A creation sent with an Idempotency-Key: answered, replayed, or refused (422, 409). */
export async function answerWithIdempotencyKey(
  res: Response,
  idempotency: IdempotencyService,
  { run, rebuild, ...request }: IdempotentCreationRequest,
): Promise<void> {
  const outcome = await idempotency.answer(request, { run, rebuild });
  switch (outcome.kind) {
    case 'answered':
      sendAnswer(res, outcome.answer, outcome.replayed);
      return;
    case 'key_reused':
      throw errors.invalidRequest(
        {
          'Idempotency-Key': 'was already used with a different request (in the last 24 hours)',
        },
        'This Idempotency-Key was already used with a different request.',
      );
    case 'in_progress':
      throw new ApiError(
        'conflict',
        'A request with this Idempotency-Key is still in progress; retry later.',
        { headers: { 'Retry-After': '1' } },
      );
  }
}
