import type { RetentionSchedule } from '@linkservice/lifecycle';
import { scheduleRetention } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import type { InstallsRepository } from './installs.repository';

/**
 * Periodically deletes installs older than INSTALL_RETENTION_DAYS with the click each matched:
 * an installation that never erased itself is not kept for longer. Every worker may run this,
 * as the deletes are idempotent. Runs once at start, then every `intervalMs`.
 */
export function scheduleInstallRetention(
  repository: Pick<InstallsRepository, 'deleteOlderThan'>,
  options: { retentionDays: number; intervalMs: number },
  logger: Logger,
): RetentionSchedule {
  return scheduleRetention(
    {
      label: 'installs',
      deleteSlice: (limit) => repository.deleteOlderThan(options.retentionDays, limit),
      intervalMs: options.intervalMs,
    },
    logger,
  );
}
