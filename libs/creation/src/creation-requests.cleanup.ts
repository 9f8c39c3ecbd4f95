import type { RetentionSchedule } from '@linkservice/lifecycle';
import { scheduleRetention } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import type { CreationRequestsRepository } from './creation-requests.repository';

/** Rows deleted per statement: keeps each delete short next to the creation transactions. */
const CLEANUP_SLICE = 5_000;

export type CleanupSchedule = RetentionSchedule;

/**
 * Periodically deletes creation_requests rows past their retention. A row is needed only while
 * its job could still be delivered, which ends at the job's deadline; every worker may run this,
 * as the deletes are idempotent. Runs once at start, then every `intervalMs`.
 */
export function scheduleCreationRequestsCleanup(
  repository: Pick<CreationRequestsRepository, 'deleteOlderThan'>,
  options: { retentionHours: number; intervalMs: number },
  logger: Logger,
): CleanupSchedule {
  return scheduleRetention(
    {
      label: 'creation requests',
      deleteSlice: (limit) => repository.deleteOlderThan(options.retentionHours, limit),
      intervalMs: options.intervalMs,
      sliceSize: CLEANUP_SLICE,
    },
    logger,
  );
}
