import type { RetentionSchedule } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import type { AnalyticsPartitionsRepository } from './analytics-partitions.repository';

/** How often the months ahead are checked: a month is created weeks before its first click. */
export const ENSURE_MONTHS_EVERY_MS = 60 * 60 * 1000;

/**
 * Keeps the analytics tables' monthly partitions in place (ensureMonths): at once when the
 * worker starts, then every ENSURE_MONTHS_EVERY_MS. Every worker runs it; a month another worker
 * is creating is left to that one. A failed run is logged and the next one retries; a run still
 * going when the next is due is not doubled. Stopped like the retention, on shutdown.
 */
export function scheduleAnalyticsPartitions(
  partitions: Pick<AnalyticsPartitionsRepository, 'ensureMonths'>,
  logger: Pick<Logger, 'info' | 'warn'>,
  { intervalMs = ENSURE_MONTHS_EVERY_MS, now = () => new Date() } = {},
): RetentionSchedule {
  let running: Promise<void> | undefined;
  const tick = (): void => {
    if (running) return;
    running = partitions
      .ensureMonths(now())
      .then(({ created, moved }) => {
        if (created > 0) logger.info({ created, moved }, 'created analytics partitions');
      })
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'analytics partitions upkeep failed; will retry');
      })
      .finally(() => {
        running = undefined;
      });
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
