import type { Logger } from '@linkservice/logger';
import type {
  CreateLinksGroupResult,
  CreateLinksJobResult,
  CreateLinksPayload,
} from '@linkservice/creation';
import {
  COMMIT_GRACE_MS,
  CREATE_LINKS_GROUP_JOB,
  CREATE_LINKS_JOB,
  createLinksGroupSchema,
  createLinksPayloadSchema,
} from '@linkservice/creation';
import type { RemoteSpan } from '@linkservice/telemetry';
import { setSpanAttributes, startRemoteSpan } from '@linkservice/telemetry';
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import { logCreationRequest } from './creation-job-log';
import type { LinkCreationService } from './create-links.service';

/** What a creation job returns: a group's answers, or a one-request job's own answer. */
export type CreationJobReply = CreateLinksGroupResult | CreateLinksJobResult;

/**
 * The BullMQ processor of creation jobs: a create-links-group job (group commit) or a
 * create-links job of one request (from a gateway before group commit, answered as it expects).
 * Parses the payload with the shared schema and hands its requests to the service. Thrown
 * errors are unexpected ones (the transaction rolled back): BullMQ retries them with backoff,
 * except once every request is past its deadline and commit grace, when no attempt could create
 * anything any more.
 */
export function createLinksProcessor(service: LinkCreationService, logger: Logger) {
  return async (job: Job): Promise<CreationJobReply> => {
    const requests = requestsOf(job);
    setSpanAttributes(jobAttributes(job, requests));
    // A request of a group gets a span in its own trace (the job's consumer span is in the trace
    // of the request that opened the group); a lone request's trace holds the consumer span.
    const spans = new Map(
      requests.map((request) => [
        request.requestId,
        requests.length > 1
          ? startRemoteSpan('create-links request', request.traceparent, requestAttributes(request))
          : undefined,
      ]),
    );
    const startedAt = performance.now();
    try {
      const answers = await service.createGroup(requests);
      for (const request of requests) {
        const answer = answers.get(request.requestId);
        if (!answer) throw new Error(`the group gave no answer for ${request.requestId}`);
        const span = spans.get(request.requestId);
        const attributes = answerAttributes(answer);
        if (span) span.setAttributes(attributes);
        else setSpanAttributes(attributes);
        inSpan(span, () => {
          logCreationRequest(logger, {
            request,
            answer,
            jobId: job.id,
            attempt: job.attemptsMade + 1,
            durationMs: performance.now() - startedAt,
          });
        });
      }
      const replies = requests.map(({ requestId }) => ({
        requestId,
        answer: answers.get(requestId) as CreateLinksJobResult,
      }));
      // A one-request job's gateway waits for that request's answer itself.
      return job.name === CREATE_LINKS_JOB ? replies[0].answer : { answers: replies };
    } catch (error) {
      // Every request of the job by its ids, so a search by any member's X-Request-Id finds it.
      logger.error(
        {
          err: error,
          jobId: job.id,
          requestIds: requests.map((request) => request.requestId),
          reqIds: requests.flatMap((request) => request.httpRequestId ?? []),
          attempt: job.attemptsMade + 1,
        },
        'creation job failed; rolled back',
      );
      const lastDeadline = Math.max(...requests.map((request) => request.deadline));
      if (Date.now() >= lastDeadline + COMMIT_GRACE_MS) {
        throw new UnrecoverableError(
          `past its deadline: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      throw error;
    } finally {
      for (const span of spans.values()) span?.end();
    }
  };
}

function inSpan(span: RemoteSpan | undefined, fn: () => void): void {
  if (span) span.inContext(fn);
  else fn();
}

/**
 * The job's requests, parsed. Never retried when they do not parse: the same bytes would fail
 * the same way. The issues name paths, not values.
 */
function requestsOf(job: Job): CreateLinksPayload[] {
  if (job.name === CREATE_LINKS_GROUP_JOB) {
    const parsed = createLinksGroupSchema.safeParse(job.data);
    if (parsed.success) return parsed.data.requests;
    throw invalidPayload(parsed.error.issues);
  }
  if (job.name === CREATE_LINKS_JOB) {
    const parsed = createLinksPayloadSchema.safeParse(job.data);
    if (parsed.success) return [parsed.data];
    throw invalidPayload(parsed.error.issues);
  }
  throw new UnrecoverableError(`unknown creation job ${job.name}`);
}

function invalidPayload(issues: readonly { path: PropertyKey[] }[]): UnrecoverableError {
  return new UnrecoverableError(
    // Not the previous release's wording (`invalid create-links payload:`), which gateways read
    // as "a worker from before group commit" (creation-client.ts).
    `invalid creation job payload: ${issues.map((i) => i.path.join('.')).join(', ')}`,
  );
}

/**
 * On the job's consumer span: what an on-call engineer searches by. Never the drafts. A lone
 * request's ids (the gateway makes the job id the id of the group's first request); a group's
 * size.
 */
function jobAttributes(
  job: Job,
  requests: readonly CreateLinksPayload[],
): Record<string, string | number> {
  if (requests.length === 1) return requestAttributes(requests[0]);
  return {
    'linkservice.job_id': job.id ?? '',
    'linkservice.requests': requests.length,
    'linkservice.entries': requests.reduce((sum, { entries }) => sum + entries.length, 0),
  };
}

function requestAttributes(request: CreateLinksPayload): Record<string, string | number> {
  return {
    'linkservice.app_id': request.appId,
    'linkservice.environment': request.environment,
    ...(request.httpRequestId === undefined
      ? {}
      : { 'linkservice.request_id': request.httpRequestId }),
    // The gateway's span names the creation request's id as its job id.
    'linkservice.job_id': request.requestId,
    'linkservice.entries': request.entries.length,
  };
}

/** A single creation's link id, and a batch's created and failed counts, for its span. */
function answerAttributes(answer: CreateLinksJobResult): Record<string, string | number> {
  if (answer.status !== 'done') return { 'linkservice.job_outcome': answer.reason };
  const { results } = answer.result;
  const linkIds = results.flatMap((entry) => (entry.ok ? [entry.link.id] : []));
  return {
    'linkservice.entries_created': linkIds.length,
    'linkservice.entries_failed': results.length - linkIds.length,
    ...(results.length === 1 && linkIds.length === 1 ? { 'linkservice.link_id': linkIds[0] } : {}),
  };
}
