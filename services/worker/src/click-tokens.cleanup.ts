import type { RetentionSchedule } from '@linkservice/lifecycle';
import { scheduleRetention } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import type { ClickTokensRepository } from './click-tokens.repository';

/**
 * Periodically deletes the click tokens past their expiry (CLICK_TOKEN_TTL_SECONDS after their
 * click): nothing about a click is kept longer than it can be used. Every worker may run it.
 */
export function scheduleClickTokensCleanup(
  repository: Pick<ClickTokensRepository, 'deleteExpired'>,
  options: { intervalMs: number; sliceSize?: number },
  logger: Logger,
): RetentionSchedule {
  return scheduleRetention(
    {
      label: 'click tokens',
      deleteSlice: (limit) => repository.deleteExpired(limit),
      intervalMs: options.intervalMs,
      sliceSize: options.sliceSize,
    },
    logger,
  );
}
