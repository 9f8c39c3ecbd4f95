import type { Request, RequestHandler, Response } from 'express';
import type { CreateLinksResult } from '@linkservice/creation';
import { authOf } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import type { FieldErrors } from '../http/errors';
import { ApiError } from '../http/errors';
import { bodyOf } from '../http/json-body';
import type { JsonAnswer } from '../http/send-json';
import { holdJsonAnswer, sendJsonAnswer } from '../http/send-json';
import type { IdempotentEndpoint, OwnedAttempt } from './idempotency.service';
import { limitHeaders } from './limit-headers';

/** 1-255 printable ASCII characters (0x20-0x7E), as Stripe's keys: no control or 8-bit bytes. */
const IDEMPOTENCY_KEY = /^[\x20-\x7E]{1,255}$/;

const INVALID_KEY: FieldErrors = {
  'Idempotency-Key': 'must be 1-255 printable ASCII characters',
};

const REUSED_KEY: FieldErrors = {
  'Idempotency-Key': 'was already used with a different request (in the last 24 hours)',
};

/** A creation endpoint as the key wraps it. Both answer through the JSON answer writer. */
export interface CreationEndpoint {
  /** Answers the request: runs the creation. */
  answer: (req: Request, res: Response) => Promise<void>;
  /**
   * Answers the request from the results the worker committed for an owner whose gateway never
   * answered (it died); `checkedAt` is the clock that owner checked the request with.
   */
  rebuild: (
    req: Request,
    res: Response,
    results: CreateLinksResult,
    checkedAt: Date,
  ) => Promise<void>;
}

/** The attempt that owns the request's Idempotency-Key, as the creation runs it. */
export interface KeyAttempt extends OwnedAttempt {
  /**
   * Postgres could not settle the creation (503 `database_unreachable`): links may exist, so the
   * key stays with this attempt until its deadline, when a retry settles it.
   */
  outcomeUnknown: () => void;
}

const attempts = new WeakMap<Response, KeyAttempt>();

/** The attempt that owns this request's Idempotency-Key; none without the header. */
export function keyAttemptOf(res: Response): KeyAttempt | undefined {
  return attempts.get(res);
}

/**
 * The Idempotency-Key around a creation endpoint (docs/decisions.md). Without the header the
 * endpoint answers as it is. With one, the key is checked (after authentication and the body, so
 * a bad body stays 400 `invalid_body`), then the key's rules (idempotency.service.ts) decide:
 * the endpoint runs as the key's owner and its answer is stored before it is sent; or the stored
 * answer is replayed (rebuilt when its owner died); or the request is refused, 422 for a key
 * used with another request and 409 while the owner still runs.
 */
export function withIdempotencyKey(
  deps: Pick<GatewayDeps, 'idempotency' | 'creationLimiter'>,
  endpoint: IdempotentEndpoint,
  { answer, rebuild }: CreationEndpoint,
): RequestHandler {
  return async (req, res) => {
    // As Node hands it over: an empty header is '' (refused), surrounding spaces and tabs are
    // already dropped (" a" and "a" are one key), repeated headers are joined with ", ".
    const key = req.headers['idempotency-key'];
    if (key === undefined) {
      await answer(req, res);
      return;
    }
    const { appId, environment } = authOf(res);
    // Like every other creation 422, a refused key tells the caller where it stands with its
    // limit; read only then, so an accepted key costs no extra Redis round trip.
    const refused = async (fields: FieldErrors, message: string) =>
      new ApiError('invalid_request', message, {
        fields,
        headers: limitHeaders(await deps.creationLimiter.state(appId)),
      });
    if (typeof key !== 'string' || !IDEMPOTENCY_KEY.test(key)) {
      throw await refused(INVALID_KEY, 'The Idempotency-Key header is invalid.');
    }
    const outcome = await deps.idempotency.answer(
      { appId, environment, key, endpoint, body: bodyOf(req) },
      {
        run: async (owned) => {
          let outcomeUnknown = false;
          attempts.set(res, {
            ...owned,
            outcomeUnknown: () => {
              outcomeUnknown = true;
            },
          });
          const answered = await holdJsonAnswer(res, () => answer(req, res));
          return { answer: answered, outcomeUnknown };
        },
        rebuild: (results, checkedAt) =>
          holdJsonAnswer(res, () => rebuild(req, res, results, checkedAt)),
      },
    );
    switch (outcome.kind) {
      case 'answered':
        sendJsonAnswer(res, outcome.replayed ? replayed(outcome.answer) : outcome.answer);
        return;
      case 'key_reused':
        throw await refused(
          REUSED_KEY,
          'This Idempotency-Key was already used with a different request.',
        );
      case 'in_progress':
        throw new ApiError(
          'conflict',
          'A request with this Idempotency-Key is still in progress; retry later.',
          { headers: { 'Retry-After': '1' } },
        );
    }
  };
}

/** A stored answer as replayed: only a replay says so. X-Request-Id stays this request's own. */
function replayed(answer: JsonAnswer): JsonAnswer {
  return { ...answer, headers: { ...answer.headers, 'Idempotent-Replayed': 'true' } };
}
