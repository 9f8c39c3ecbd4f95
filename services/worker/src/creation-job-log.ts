import type { CreateLinksJobResult } from '@linkservice/creation';
import type { Logger } from '@linkservice/logger';
import type { Job } from 'bullmq';

type Processor = (job: Job) => Promise<CreateLinksJobResult>;

/** The payload fields the line names, read without trusting the payload (the processor parses it). */
function payloadFields(data: unknown): {
  httpRequestId?: unknown;
  appId?: unknown;
  entries?: number;
} {
  if (typeof data !== 'object' || data === null) return {};
  const { httpRequestId, appId, entries } = data as Record<string, unknown>;
  return { httpRequestId, appId, entries: Array.isArray(entries) ? entries.length : undefined };
}

function resultFields(result: CreateLinksJobResult): Record<string, unknown> {
  if (result.status === 'abandoned') {
    return { status: 'abandoned', reason: result.reason, created: 0, failed: 0 };
  }
  const created = result.result.results.filter((entry) => entry.ok).length;
  return {
    status: 'done',
    created,
    failed: result.result.results.length - created,
    ...(result.result.stoppedEarly && { stoppedEarly: result.result.stoppedEarly.reason }),
  };
}

/**
 * One info line per creation job the worker answers: the HTTP request's X-Request-Id as `reqId`
 * and the job id as `jobId` (the gateway's request line names both the same way), app, entries,
 * how many were created and failed, and how long the attempt took. Written inside the
 * processor's call, so it carries the job's trace_id/span_id when tracing is on. A thrown
 * attempt is logged by the processor itself and by the Worker's 'failed' listener.
 */
export function withCreationJobLog(processor: Processor, logger: Logger): Processor {
  return async (job) => {
    const startedAt = performance.now();
    const result = await processor(job);
    if (logger.isLevelEnabled('info')) {
      const { httpRequestId, appId, entries } = payloadFields(job.data);
      logger.info(
        {
          reqId: httpRequestId,
          jobId: job.id,
          appId,
          entries,
          ...resultFields(result),
          attempt: job.attemptsMade + 1,
          durationMs: Math.round(performance.now() - startedAt),
        },
        'creation job finished',
      );
    }
    return result;
  };
}
