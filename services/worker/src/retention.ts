import { IDEMPOTENCY_KEY_TTL_HOURS } from '@linkservice/creation';
import type { RetentionSchedule } from '@linkservice/lifecycle';
import { scheduleRetentions } from '@linkservice/lifecycle';
import type { WorkerConfig } from './config';
import type { WorkerDeps } from './deps';

/** How often links' dimension rows of finished days are derived (a day waits at most this). */
const DERIVE_DIMENSION_DAYS_EVERY_MS = 10 * 60 * 1000;

/**
 * Everything the worker deletes past its retention, one row per table. Every worker may run
 * these, as the deletes are idempotent; each runs once at start, then on its interval.
 */
export function scheduleWorkerRetention(
  deps: Pick<
    WorkerDeps,
    'logger' | 'creationRequests' | 'idempotencyKeys' | 'installs' | 'linkDimensionDays'
  >,
  config: WorkerConfig,
): RetentionSchedule {
  return scheduleRetentions(
    [
      {
        // A row is needed only while its job could still be delivered, which ends at the job's
        // deadline; kept a day (the config refuses less) so an Idempotency-Key can settle it.
        label: 'creation requests',
        deleteSlice: (limit) =>
          deps.creationRequests.deleteOlderThan(config.CREATION_REQUESTS_RETENTION_HOURS, limit),
        intervalMs: config.CREATION_REQUESTS_CLEANUP_INTERVAL_MS,
      },
      {
        // Past IDEMPOTENCY_KEY_TTL_HOURS the gateway already treats a key as absent. On the
        // creation requests' interval: a key's record and the request it names are kept equally
        // long, so a key can always be settled.
        label: 'idempotency keys',
        deleteSlice: (limit) =>
          deps.idempotencyKeys.deleteOlderThan(IDEMPOTENCY_KEY_TTL_HOURS, limit),
        intervalMs: config.CREATION_REQUESTS_CLEANUP_INTERVAL_MS,
      },
      {
        // Not a deletion, but the same kind of task: bounded slices until none is left, on
        // every worker (each takes link-days the others have not locked).
        label: 'link dimension days',
        deleteSlice: (limit) => deps.linkDimensionDays.deriveSlice(limit),
        intervalMs: DERIVE_DIMENSION_DAYS_EVERY_MS,
        sliceSize: 500,
      },
      {
        // An installation that never erased itself is not kept longer, nor the click it matched.
        label: 'installs',
        deleteSlice: (limit) => deps.installs.deleteOlderThan(config.INSTALL_RETENTION_DAYS, limit),
        intervalMs: config.INSTALL_RETENTION_INTERVAL_MS,
      },
    ],
    deps.logger,
  );
}
