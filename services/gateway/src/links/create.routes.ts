import type { Response } from 'express';
import { authOf } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { ApiError, errors } from '../http/errors';
import { bodyOf } from '../http/json-body';
import { requestIdOf } from '../http/request-id';
import type { ApiRoute } from '../http/routes';
import type { CreationLimitState } from '../limits/creation-limiter';
import { createLinkBatchDoc, createLinkDoc } from './create.openapi';
import { setJobIdOf } from '../http/request-logging';
import type {
  CreateBatchOutcome,
  CreateLinkOutcome,
  CreationScope,
  OnCreationJob,
} from './create.service';

/** RateLimit-* on every creation answer, so clients can pace themselves before a 429. */
function setLimitHeaders(res: Response, limit: CreationLimitState): void {
  res.set({
    'RateLimit-Limit': String(limit.limit),
    'RateLimit-Remaining': String(limit.remaining),
    'RateLimit-Reset': String(limit.resetSeconds),
  });
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

function answerCreateLink(res: Response, outcome: CreateLinkOutcome): void {
  setLimitHeaders(res, outcome.limit);
  switch (outcome.kind) {
    case 'created':
      res.status(201).json({ link: outcome.link });
      return;
    case 'invalid':
      throw errors.invalidRequest(outcome.fieldErrors);
    case 'plan_limit_reached':
      throw new ApiError('invalid_request', PLAN_LIMIT_MESSAGE);
    case 'rate_limited':
      throw rateLimited(outcome.limit);
    case 'unavailable':
      throw errors.unavailable(UNAVAILABLE_MESSAGE);
  }
}

function answerCreateBatch(res: Response, outcome: CreateBatchOutcome): void {
  setLimitHeaders(res, outcome.limit);
  switch (outcome.kind) {
    case 'reported': {
      const { report } = outcome;
      if (report.stoppedEarly?.reason === 'rate_limited') {
        res.set('Retry-After', retryAfter(outcome.limit));
      }
      const everyEntryCreated = report.failed === 0 && report.notAttempted === 0;
      res.status(everyEntryCreated ? 201 : 207).json(report);
      return;
    }
    case 'invalid':
      throw errors.invalidRequest(
        outcome.fieldErrors,
        'The batch request is invalid; nothing was created.',
      );
    case 'unavailable':
      throw errors.unavailable(UNAVAILABLE_MESSAGE);
  }
}

/** The creation's job id goes on the request's log line (request-logging.ts reads it). */
function jobIdOnLogLine(res: Response): OnCreationJob {
  return (jobId) => {
    setJobIdOf(res, jobId);
  };
}

/** POST /links and POST /links/batch. Listed in app.ts before the routes with `:linkId`. */
export function createRoutes(deps: GatewayDeps): ApiRoute[] {
  const { creation } = deps;
  return [
    {
      method: 'POST',
      path: '/links',
      openapi: createLinkDoc,
      handler: async (req, res) => {
        answerCreateLink(
          res,
          await creation.createLink(scopeOf(res), bodyOf(req), jobIdOnLogLine(res)),
        );
      },
    },
    {
      method: 'POST',
      path: '/links/batch',
      openapi: createLinkBatchDoc,
      handler: async (req, res) => {
        answerCreateBatch(
          res,
          await creation.createBatch(scopeOf(res), bodyOf(req), jobIdOnLogLine(res)),
        );
      },
    },
  ];
}

/** The caller's app and environment, and the request id the worker's trace and log repeat. */
function scopeOf(res: Response): CreationScope {
  const { appId, environment } = authOf(res);
  return { appId, environment, httpRequestId: requestIdOf(res) };
}
