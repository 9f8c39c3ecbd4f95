import type { RequestHandler, Response } from 'express';
import { authOf } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { ApiError, errors } from '../http/errors';
import { bodyOf } from '../http/json-body';
import { requestIdOf } from '../http/request-id';
import type { ApiRoute } from '../http/routes';
import type { CreationLimitState } from '../limits/creation-limiter';
import { createLinkBatchDoc, createLinkDoc } from './creation.openapi';
import { setJobIdOf } from '../http/request-logging';
import type { CreateLinksResult, UnavailableReason } from '@linkservice/creation';
import type { CreationRun, IdempotentEndpoint, OwnedAttempt } from './idempotency.service';
import { answerWithIdempotencyKey, sendAnswer } from './idempotency-key.routes';
import type {
  CreateBatchOutcome,
  CreateLinkOutcome,
  CreationScope,
  OnCreationJob,
} from './link-submission.service';

/** RateLimit-* on every creation answer, so clients can pace themselves before a 429. */
function limitHeaders(limit: CreationLimitState): Record<string, string> {
  return {
    'RateLimit-Limit': String(limit.limit),
    'RateLimit-Remaining': String(limit.remaining),
    'RateLimit-Reset': String(limit.resetSeconds),
  };
}

/** Whole seconds until the window resets, never 0: "retry now" would only meet another 429. */
function retryAfter(limit: CreationLimitState): string {
  return String(Math.max(limit.resetSeconds, 1));
}

function rateLimited(limit: CreationLimitState): ApiError {
  const seconds = retryAfter(limit);
  return new ApiError(
    'rate_limited',
    `This app has used its ${limit.limit} link creations for this hour; retry in ${seconds} seconds.`,
    { headers: { 'Retry-After': seconds } },
  );
}

const PLAN_LIMIT_MESSAGE =
  "This app has reached its plan's link allowance; no more links can be created until the allowance is raised.";

const UNAVAILABLE_MESSAGE =
  'Link creation is temporarily unavailable and nothing was created; retry shortly.';

/**
 * Creation answers are values (status, headers, the JSON text), so an Idempotency-Key can store
 * exactly what was sent; errors keep the error contract's body and headers.
 */
function jsonAnswer(status: number, headers: Record<string, string>, body: unknown): CreationRun {
  return { answer: { status, headers, body: JSON.stringify(body) } };
}

function errorAnswer(error: ApiError, headers: Record<string, string>): CreationRun {
  return jsonAnswer(error.status, { ...headers, ...error.headers }, error.toBody());
}

function createLinkAnswer(outcome: CreateLinkOutcome): CreationRun {
  const headers = limitHeaders(outcome.limit);
  switch (outcome.kind) {
    case 'created':
      return jsonAnswer(201, headers, { link: outcome.link });
    case 'invalid':
      return errorAnswer(errors.invalidRequest(outcome.fieldErrors), headers);
    case 'plan_limit_reached':
      return errorAnswer(new ApiError('invalid_request', PLAN_LIMIT_MESSAGE), headers);
    case 'rate_limited':
      return errorAnswer(rateLimited(outcome.limit), headers);
    case 'unavailable':
      return unavailableAnswer(outcome.reason, headers);
  }
}

function createBatchAnswer(outcome: CreateBatchOutcome): CreationRun {
  const headers = limitHeaders(outcome.limit);
  switch (outcome.kind) {
    case 'reported': {
      const { report } = outcome;
      if (report.stoppedEarly?.reason === 'rate_limited') {
        headers['Retry-After'] = retryAfter(outcome.limit);
      }
      const everyEntryCreated = report.failed === 0 && report.notAttempted === 0;
      return jsonAnswer(everyEntryCreated ? 201 : 207, headers, report);
    }
    case 'invalid':
      return errorAnswer(
        errors.invalidRequest(
          outcome.fieldErrors,
          'The batch request is invalid; nothing was created.',
        ),
        headers,
      );
    case 'unavailable':
      return unavailableAnswer(outcome.reason, headers);
  }
}

function unavailableAnswer(
  reason: UnavailableReason,
  headers: Record<string, string>,
): CreationRun {
  return {
    ...errorAnswer(errors.unavailable(UNAVAILABLE_MESSAGE), headers),
    outcomeUnknown: reason === 'database_unreachable',
  };
}

/**
 * The creation's job id goes on the request's log line (request-logging.ts reads it); a key's
 * owner is told too, since from then on links may exist (OwnedAttempt.onJob).
 */
function onCreationJob(res: Response, attempt?: OwnedAttempt): OnCreationJob {
  return (jobId) => {
    setJobIdOf(res, jobId);
    attempt?.onJob();
  };
}

/** POST /links and POST /links/batch. Listed in app.ts before the routes with `:linkId`. */
export function createRoutes(deps: GatewayDeps): ApiRoute[] {
  const { linkSubmission: creation } = deps;
  return [
    {
      method: 'POST',
      path: '/links',
      openapi: createLinkDoc,
      handler: creationHandler(deps, 'POST /links', {
        run: async (body, res, attempt) =>
          createLinkAnswer(
            await creation.createLink(scopeOf(res, attempt), body, onCreationJob(res, attempt)),
          ),
        rebuild: async (_body, res, results) =>
          createLinkAnswer(await creation.rebuildLink(scopeOf(res), results)),
      }),
    },
    {
      method: 'POST',
      path: '/links/batch',
      openapi: createLinkBatchDoc,
      handler: creationHandler(deps, 'POST /links/batch', {
        run: async (body, res, attempt) =>
          createBatchAnswer(
            await creation.createBatch(scopeOf(res, attempt), body, onCreationJob(res, attempt)),
          ),
        rebuild: async (body, res, results, checkedAt) =>
          createBatchAnswer(
            await creation.rebuildBatch({ ...scopeOf(res), checkedAt }, body, results),
          ),
      }),
    },
  ];
}

/** How one creation endpoint runs, and rebuilds the answer of a run its gateway never gave. */
interface CreationEndpoint {
  run: (
    body: Record<string, unknown>,
    res: Response,
    attempt?: OwnedAttempt,
  ) => Promise<CreationRun>;
  rebuild: (
    body: Record<string, unknown>,
    res: Response,
    results: CreateLinksResult,
    checkedAt: Date,
  ) => Promise<CreationRun>;
}

/**
 * Without an Idempotency-Key the creation runs and answers as the spec says; with one, the key's
 * rules decide whether it runs, waits, replays or is refused (idempotency.service.ts).
 */
function creationHandler(
  deps: GatewayDeps,
  endpoint: IdempotentEndpoint,
  { run, rebuild }: CreationEndpoint,
): RequestHandler {
  return async (req, res) => {
    const body = bodyOf(req);
    const key = req.headers['idempotency-key'];
    if (key === undefined) {
      sendAnswer(res, (await run(body, res)).answer);
      return;
    }
    await answerWithIdempotencyKey(res, deps.idempotency, {
      ...keyScopeOf(res),
      key,
      endpoint,
      body,
      run: (attempt) => run(body, res, attempt),
      rebuild: async (results, checkedAt) => (await rebuild(body, res, results, checkedAt)).answer,
      limitHeaders: () => currentLimitHeaders(deps, res),
    });
  };
}

/**
 * The caller's app and environment, and the request id the worker's trace and log repeat; for a
 * key's owner also the creation request id and clock the key recorded.
 */
function scopeOf(res: Response, attempt?: OwnedAttempt): CreationScope {
  const { appId, environment } = authOf(res);
  return {
    appId,
    environment,
    httpRequestId: requestIdOf(res),
    ...(attempt === undefined
      ? {}
      : { creationRequestId: attempt.creationRequestId, checkedAt: attempt.checkedAt }),
  };
}

/** RateLimit-* of the app's window now, read without using anything up. */
async function currentLimitHeaders(
  deps: Pick<GatewayDeps, 'creationLimiter'>,
  res: Response,
): Promise<Record<string, string>> {
  return limitHeaders(await deps.creationLimiter.state(authOf(res).appId));
}

/** An Idempotency-Key belongs to the app and environment of the authenticating API key. */
function keyScopeOf(res: Response): Pick<CreationScope, 'appId' | 'environment'> {
  const { appId, environment } = authOf(res);
  return { appId, environment };
}
