import type { Logger } from '@linkservice/logger';
import type { CreateLinksJobResult } from '@linkservice/creation';
import { COMMIT_GRACE_MS, createLinksPayloadSchema } from '@linkservice/creation';
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
    try {
      return await service.createLinks(payload);
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
