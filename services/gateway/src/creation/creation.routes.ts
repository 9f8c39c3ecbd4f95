import type { Response } from 'express';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import type { CreateLinksResult, UnavailableReason } from '@linkservice/creation';
import { authOf } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { ApiError, errors } from '../http/errors';
import { bodyOf } from '../http/json-body';
import { requestIdOf } from '../http/request-id';
import { setJobIdOf } from '../http/request-logging';
import type { ApiRoute } from '../http/routes';
import { sendError, sendJson } from '../http/send-json';
import { createLinkBatchDoc, createLinkDoc } from './creation.openapi';
import { keyAttemptOf, withIdempotencyKey } from './idempotency-key.routes';
import { limitHeaders, rateLimited, retryAfter } from './limit-headers';
import type {
  CreateBatchOutcome,
  CreateLinkOutcome,
  CreationScope,
} from './link-submission.service';

const PLAN_LIMIT_MESSAGE =
  "This app has reached its plan's link allowance; no more links can be created until the allowance is raised.";

const UNAVAILABLE_MESSAGE =
  'Link creation is temporarily unavailable and nothing was created; retry shortly.';

/** POST /links and POST /links/batch. Listed in app.ts before the routes with `:linkId`. */
export function creationRoutes(deps: GatewayDeps): ApiRoute[] {
  const { linkSubmission } = deps;
  return [
    creationRoute(deps, '/links', createLinkDoc, {
      create: (scope, body) => linkSubmission.createLink(scope, body),
      rebuild: (scope, _body, results) => linkSubmission.rebuildLink(scope, results),
      send: sendLinkOutcome,
    }),
    creationRoute(deps, '/links/batch', createLinkBatchDoc, {
      create: (scope, body) => linkSubmission.createBatch(scope, body),
      rebuild: (scope, body, results) => linkSubmission.rebuildBatch(scope, body, results),
      send: sendBatchOutcome,
    }),
  ];
}

/** What a creation endpoint does with a request, and how its outcome is answered. */
interface CreationSteps<Outcome> {
  create: (scope: CreationScope, body: Record<string, unknown>) => Promise<Outcome>;
  /** The outcome of a run whose gateway never answered, from the worker's results. */
  rebuild: (
    scope: CreationScope,
    body: Record<string, unknown>,
    results: CreateLinksResult,
  ) => Promise<Outcome>;
  send: (res: Response, outcome: Outcome) => void;
}

/**
 * Both creation endpoints: the caller's scope and the body, the service, the outcome as an
 * answer; the Idempotency-Key around it all.
 */
function creationRoute<Outcome>(
  deps: GatewayDeps,
  path: '/links' | '/links/batch',
  openapi: ZodOpenApiOperationObject,
  { create, rebuild, send }: CreationSteps<Outcome>,
): ApiRoute {
  return {
    method: 'POST',
    path,
    openapi,
    handler: withIdempotencyKey(deps, `POST ${path}`, {
      answer: async (req, res) => {
        send(res, await create(scopeOf(res), bodyOf(req)));
      },
      rebuild: async (req, res, results, checkedAt) => {
        send(res, await rebuild({ ...scopeOf(res), checkedAt }, bodyOf(req), results));
      },
    }),
  };
}

/**
 * The caller's app and environment, and the request id the worker's trace and log repeat; for
 * an Idempotency-Key's owner also the creation request id and clock the key recorded. The job
 * id goes on the request's log line (request-logging.ts reads it), and a key's owner is told
 * too, since from then on links may exist.
 */
function scopeOf(res: Response): CreationScope {
  const { appId, environment } = authOf(res);
  const attempt = keyAttemptOf(res);
  return {
    appId,
    environment,
    httpRequestId: requestIdOf(res),
    ...(attempt && { creationRequestId: attempt.creationRequestId, checkedAt: attempt.checkedAt }),
    onJob: (jobId) => {
      setJobIdOf(res, jobId);
      attempt?.onJob();
    },
  };
}

function sendLinkOutcome(res: Response, outcome: CreateLinkOutcome): void {
  const headers = limitHeaders(outcome.limit);
  switch (outcome.kind) {
    case 'created':
      sendJson(res, { link: outcome.link }, { status: 201, headers });
      return;
    case 'invalid':
      sendError(res, errors.invalidRequest(outcome.fieldErrors), headers);
      return;
    case 'plan_limit_reached':
      sendError(res, new ApiError('invalid_request', PLAN_LIMIT_MESSAGE), headers);
      return;
    case 'rate_limited':
      sendError(res, rateLimited(outcome.limit), headers);
      return;
    case 'unavailable':
      sendUnavailable(res, outcome.reason, headers);
      return;
  }
}

function sendBatchOutcome(res: Response, outcome: CreateBatchOutcome): void {
  const headers = limitHeaders(outcome.limit);
  switch (outcome.kind) {
    case 'reported': {
      const { report } = outcome;
      if (report.stoppedEarly?.reason === 'rate_limited') {
        headers['Retry-After'] = retryAfter(outcome.limit);
      }
      const everyEntryCreated = report.failed === 0 && report.notAttempted === 0;
      sendJson(res, report, { status: everyEntryCreated ? 201 : 207, headers });
      return;
    }
    case 'invalid':
      sendError(
        res,
        errors.invalidRequest(
          outcome.fieldErrors,
          'The batch request is invalid; nothing was created.',
        ),
        headers,
      );
      return;
    case 'unavailable':
      sendUnavailable(res, outcome.reason, headers);
      return;
  }
}

function sendUnavailable(
  res: Response,
  reason: UnavailableReason,
  headers: Record<string, string>,
): void {
  // Postgres could not settle the creation: the worker may have committed it.
  if (reason === 'database_unreachable') keyAttemptOf(res)?.outcomeUnknown();
  sendError(res, errors.unavailable(UNAVAILABLE_MESSAGE), headers);
}
