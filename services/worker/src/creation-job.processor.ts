import type { Logger } from '@linkservice/logger';
import type {
  CreateLinksGroupResult,
  CreateLinksJobResult,
  CreateLinksPayload,
  CreationJobKind,
} from '@linkservice/creation';
import { COMMIT_GRACE_MS, groupJob, oneRequestJob } from '@linkservice/creation';
import type { RemoteSpan } from '@linkservice/telemetry';
import { setSpanAttributes, startRemoteSpan } from '@linkservice/telemetry';
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import { logCreationRequest } from './creation-job-log';
import type { CreationGroupWriter } from './creation-group.writer';
import { AppNotFound } from './creation-group.writer';

/** What a creation job returns: a group's answers, or a one-request job's own answer. */
export type CreationJobReply = CreateLinksGroupResult | CreateLinksJobResult;

/**
 * The kinds of creation job this worker takes, by name: group jobs, and the one-request jobs of
 * 0.1.0 gateways (pre-group-commit.compat.ts in @linkservice/creation; goes in 0.3.0).
 */
const JOB_KINDS = new Map<string, CreationJobKind<CreationJobReply>>(
  [groupJob, oneRequestJob].map((kind) => [kind.name, kind]),
);

/**
 * A job failed on purpose, without retries, because it named an app this database does not
 * have. Its one log line is the processor's; the Worker's 'failed' listener adds none.
 */
export class UnknownAppFailure extends UnrecoverableError {
  constructor(message: string) {
    super(message);
    // BullMQ recognises an unrecoverable failure by this name (or instanceof).
    this.name = 'UnrecoverableError';
  }
}

export interface CreationProcessorOptions {
  /** The queue's Redis prefix, named in the log line of a job from another stack. */
  redisPrefix: string;
}

/**
 * The BullMQ processor of creation jobs. Parses the payload with its kind's shared schema, hands
 * the requests to the writer, logs one line per request and replies in the kind's shape. Thrown
 * errors are unexpected ones (the transaction rolled back): BullMQ retries them with backoff,
 * except once every request is past its deadline and commit grace, when no attempt could create
 * anything any more, and except a job naming an app this database does not have (another stack
 * on the same Redis and prefix): that fails at once, with one log line naming the likely cause.
 */
export function createLinksProcessor(
  writer: CreationGroupWriter,
  logger: Logger,
  { redisPrefix }: CreationProcessorOptions,
) {
  return async (job: Job): Promise<CreationJobReply> => {
    const { kind, requests } = parseJob(job);
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
      const answers = await writer.write(requests);
      const replies = requests.map(({ requestId }) => {
        const answer = answers.get(requestId);
        if (!answer) throw new Error(`the group gave no answer for ${requestId}`);
        return { requestId, answer };
      });
      for (const [index, { requestId, answer }] of replies.entries()) {
        const span = spans.get(requestId);
        const attributes = answerAttributes(answer);
        if (span) span.setAttributes(attributes);
        else setSpanAttributes(attributes);
        inSpan(span, () => {
          logCreationRequest(logger, {
            request: requests[index],
            answer,
            jobId: job.id,
            attempt: job.attemptsMade + 1,
            durationMs: performance.now() - startedAt,
          });
        });
      }
      return kind.replyOf(replies);
    } catch (error) {
      if (error instanceof AppNotFound) {
        logger.error(
          {
            jobId: job.id,
            appIds: [...new Set(error.requests.map(({ appId }) => appId))],
            requestIds: error.requests.map(({ requestId }) => requestId),
            redisPrefix,
          },
          'creation job for an app this database does not have: most likely another stack ' +
            'with its own database shares this Redis and REDIS_PREFIX (give each stack its own ' +
            'prefix); failed without retries',
        );
        throw new UnknownAppFailure(`${error.message}: another stack on this Redis prefix?`);
      }
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
 * The job's kind and requests, parsed. Never retried when they do not parse: the same bytes
 * would fail the same way. The message names issue paths, not values.
 */
function parseJob(job: Job): {
  kind: CreationJobKind<CreationJobReply>;
  requests: CreateLinksPayload[];
} {
  const kind = JOB_KINDS.get(job.name);
  if (!kind) throw new UnrecoverableError(`unknown creation job ${job.name}`);
  const parsed = kind.requestsOf(job.data);
  if (parsed.ok) return { kind, requests: parsed.requests };
  throw new UnrecoverableError(
    // Not 0.1.0's wording (`invalid create-links payload:`), which gateways read as "a worker
    // from before group commit" (pre-group-commit.compat.ts).
    `invalid creation job payload: ${parsed.issuePaths.join(', ')}`,
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
