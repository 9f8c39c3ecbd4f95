import type { CreateLinksJobResult, CreateLinksPayload } from '@linkservice/creation';
import type { Logger } from '@linkservice/logger';

function answerFields(answer: CreateLinksJobResult): Record<string, unknown> {
  if (answer.status === 'abandoned') {
    return { status: 'abandoned', reason: answer.reason, created: 0, failed: 0 };
  }
  const created = answer.result.results.filter((entry) => entry.ok).length;
  return {
    status: 'done',
    created,
    failed: answer.result.results.length - created,
    ...(answer.result.stoppedEarly && { stoppedEarly: answer.result.stoppedEarly.reason }),
  };
}

export interface AnsweredRequest {
  request: CreateLinksPayload;
  answer: CreateLinksJobResult;
  /** The BullMQ job that carried it (a group's job id is its first request's id). */
  jobId: string | undefined;
  attempt: number;
  durationMs: number;
}

/**
 * One info line per creation request the worker answers, whether its job carried it alone or in
 * a group: the HTTP request's X-Request-Id as `reqId` and the creation request's id as `jobId`
 * (the gateway's request line names both the same way), the group's job as `groupJobId` when it
 * is another, app, entries, how many were created and failed, and how long the attempt took.
 * Called in the request's span context, so it carries its trace_id/span_id when tracing is on.
 * A thrown attempt is logged by the processor itself and by the Worker's 'failed' listener.
 */
export function logCreationRequest(logger: Logger, answered: AnsweredRequest): void {
  if (!logger.isLevelEnabled('info')) return;
  const { request, answer, jobId, attempt, durationMs } = answered;
  logger.info(
    {
      reqId: request.httpRequestId,
      jobId: request.requestId,
      ...(jobId !== request.requestId && { groupJobId: jobId }),
      appId: request.appId,
      entries: request.entries.length,
      ...answerFields(answer),
      attempt,
      durationMs: Math.round(durationMs),
    },
    'creation job finished',
  );
}
