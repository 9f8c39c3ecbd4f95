import type { RetentionSchedule } from '@linkservice/lifecycle';
import { scheduleRetention } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import type { CreationRequestsRepository } from './creation-requests.repository';
import type { IdempotencyKeysRepository } from './idempotency-keys.repository';
import { IDEMPOTENCY_KEY_TTL_HOURS } from './idempotency-keys.repository';

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

/**
 * Periodically deletes idempotency_keys rows past IDEMPOTENCY_KEY_TTL_HOURS, when the gateway
 * already treats them as absent. Runs beside the creation_requests cleanup, on its interval: a
 * key's record and the creation request it names are kept equally long (the worker's config
 * refuses a shorter creation_requests retention), so a key can always be settled.
 */
export function scheduleIdempotencyKeysCleanup(
  repository: Pick<IdempotencyKeysRepository, 'deleteOlderThan'>,
  options: { intervalMs: number },
  logger: Logger,
): CleanupSchedule {
  return scheduleRetention(
    {
      label: 'idempotency keys',
      deleteSlice: (limit) => repository.deleteOlderThan(IDEMPOTENCY_KEY_TTL_HOURS, limit),
      intervalMs: options.intervalMs,
      sliceSize: CLEANUP_SLICE,
    },
    logger,
  );
}
