import type { Logger } from '@linkservice/logger';
import type { CreationRequestsRepository } from './creation-requests.repository';

/** Rows deleted per statement: keeps each delete short next to the creation transactions. */
const CLEANUP_SLICE = 5_000;

export interface CleanupSchedule {
  stop(): Promise<void>;
}

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
  let running: Promise<void> | undefined;
  let stopped = false;

  const runOnce = async (): Promise<void> => {
    let total = 0;
    for (;;) {
      if (stopped) break;
      const deleted = await repository.deleteOlderThan(options.retentionHours, CLEANUP_SLICE);
      total += deleted;
      if (deleted < CLEANUP_SLICE) break;
    }
    if (total > 0) logger.info({ deleted: total }, 'deleted old creation requests');
  };
  const tick = (): void => {
    if (running) return;
    running = runOnce()
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'creation requests cleanup failed; will retry');
      })
      .finally(() => {
        running = undefined;
      });
  };

  tick();
  const timer = setInterval(tick, options.intervalMs);
  timer.unref();
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
