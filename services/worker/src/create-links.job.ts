import type { Logger } from '@linkservice/logger';
import type { CreateLinksJobResult } from '@linkservice/creation';
import { COMMIT_GRACE_MS, createLinksPayloadSchema } from '@linkservice/creation';
import { setSpanAttributes } from '@linkservice/telemetry';
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { LinkCreationService } from './create-links.service';

/**
 * The BullMQ processor of create-links jobs. Parses the payload with the shared schema and hands
 * it to the service. Thrown errors are unexpected ones (the transaction rolled back): BullMQ
 * retries them with backoff, except once the job is past its deadline and commit grace, when no
 * attempt could create anything any more.
 */
export function createLinksProcessor(service: LinkCreationService, logger: Logger) {
  return async (job: Job): Promise<CreateLinksJobResult> => {
    const parsed = createLinksPayloadSchema.safeParse(job.data);
    if (!parsed.success) {
      // Never retried: the same bytes would fail the same way. The issues name paths, not values.
      throw new UnrecoverableError(
        `invalid create-links payload: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`,
      );
    }
    const payload = parsed.data;
    // On the job's consumer span: what an on-call engineer searches by. Never the drafts.
    setSpanAttributes({
      'linkservice.app_id': payload.appId,
      'linkservice.environment': payload.environment,
      ...(payload.httpRequestId === undefined
        ? {}
        : { 'linkservice.request_id': payload.httpRequestId }),
      // The gateway makes the job id the creation request's id.
      'linkservice.job_id': payload.requestId,
      'linkservice.entries': payload.entries.length,
    });
    try {
      const result = await service.createLinks(payload);
      setSpanAttributes(createdLinkAttributes(result));
      return result;
    } catch (error) {
      logger.error(
        { err: error, requestId: payload.requestId, attempt: job.attemptsMade + 1 },
        'creation job failed; rolled back',
      );
      if (Date.now() >= payload.deadline + COMMIT_GRACE_MS) {
        throw new UnrecoverableError(
          `past its deadline: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      throw error;
    }
  };
}

/** A single creation's link id, and a batch's created and failed counts, for the job's span. */
function createdLinkAttributes(result: CreateLinksJobResult): Record<string, string | number> {
  if (result.status !== 'done') return { 'linkservice.job_outcome': result.reason };
  const { results } = result.result;
  const linkIds = results.flatMap((entry) => (entry.ok ? [entry.link.id] : []));
  return {
    'linkservice.entries_created': linkIds.length,
    'linkservice.entries_failed': results.length - linkIds.length,
    ...(results.length === 1 && linkIds.length === 1 ? { 'linkservice.link_id': linkIds[0] } : {}),
  };
}
