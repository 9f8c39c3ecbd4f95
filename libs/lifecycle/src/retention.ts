import type { Logger } from '@linkservice/logger';

/** Rows deleted per statement by default: keeps each delete short next to the service's own work. */
export const DEFAULT_RETENTION_SLICE = 5_000;

export interface RetentionTask {
  /** What is deleted, for the log: `deleted old <label>`, `<label> cleanup failed; will retry`. */
  label: string;
  /** Deletes at most `limit` rows past their retention, in one short statement; returns how many. */
  deleteSlice(limit: number): Promise<number>;
  /** Time between runs; the first run starts at once. */
  intervalMs: number;
  sliceSize?: number;
}

export interface RetentionSchedule {
  /** Stops the timer and waits for a run in progress, which ends after its current slice. */
  stop(): Promise<void>;
}

/**
 * Periodically deletes rows past their retention, in bounded slices until a slice comes back
 * short. Deletes must be idempotent: every replica may run the same task. A run still going
 * when the next is due is not doubled; a failed run is logged and the next one retries.
 */
export function scheduleRetention(
  task: RetentionTask,
  logger: Pick<Logger, 'info' | 'warn'>,
): RetentionSchedule {
  const sliceSize = task.sliceSize ?? DEFAULT_RETENTION_SLICE;
  let running: Promise<void> | undefined;
  let stopped = false;

  const runOnce = async (): Promise<void> => {
    let total = 0;
    for (;;) {
      if (stopped) break;
      const deleted = await task.deleteSlice(sliceSize);
      total += deleted;
      if (deleted < sliceSize) break;
    }
    if (total > 0) logger.info({ deleted: total }, `deleted old ${task.label}`);
  };
  const tick = (): void => {
    if (running) return;
    running = runOnce()
      .catch((error: unknown) => {
        logger.warn({ err: error }, `${task.label} cleanup failed; will retry`);
      })
      .finally(() => {
        running = undefined;
      });
  };

  tick();
  const timer = setInterval(tick, task.intervalMs);
  timer.unref();
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}

/**
 * One schedule for several retention tasks, each on its own interval: what a service starts
 * beside its work and stops on shutdown. Its tasks are a table (label, what to delete, how
 * often), so a new retention is a row, not another wrapper.
 */
export function scheduleRetentions(
  tasks: readonly RetentionTask[],
  logger: Pick<Logger, 'info' | 'warn'>,
): RetentionSchedule {
  const schedules = tasks.map((task) => scheduleRetention(task, logger));
  return {
    stop: async () => {
      await Promise.all(schedules.map((schedule) => schedule.stop()));
    },
  };
}
