import { IDEMPOTENCY_KEY_TTL_HOURS } from '@linkservice/creation';
import type { RetentionSchedule, RetentionTask } from '@linkservice/lifecycle';
import { scheduleRetentions } from '@linkservice/lifecycle';
import type { AnalyticsTable } from './analytics/analytics-months';
import { ANALYTICS_TABLES, isPartitioned } from './analytics/analytics-months';
import type { WorkerConfig } from './config';
import type { WorkerDeps } from './deps';
import { webhookRetentionTasks } from './webhooks/webhook-retention';

/** How often links' dimension rows of finished days are derived (a day waits at most this). */
const DERIVE_DIMENSION_DAYS_EVERY_MS = 10 * 60 * 1000;

/** How often the analytics tables are cut back to their retention (a day is their unit). */
const ANALYTICS_RETENTION_EVERY_MS = 60 * 60 * 1000;

/**
 * One analytics table's retention: months wholly past it are dropped as partitions (cheap, and
 * no dead rows left behind), then what remains past it (the month straddling the cutoff, the
 * DEFAULT partition, an unpartitioned table) is deleted in slices.
 */
function analyticsRetention(
  deps: Pick<WorkerDeps, 'logger' | 'analyticsPartitions'>,
  table: AnalyticsTable,
): RetentionTask {
  return {
    label: `${table} rows`,
    deleteSlice: async (limit) => {
      const now = new Date();
      if (isPartitioned(table)) {
        const dropped = await deps.analyticsPartitions.dropExpiredMonths(table, now);
        if (dropped > 0) deps.logger.info({ dropped }, `dropped old ${table} partitions`);
      }
      return deps.analyticsPartitions.deleteExpiredSlice(table, now, limit);
    },
    intervalMs: ANALYTICS_RETENTION_EVERY_MS,
  };
}

/**
 * Everything the worker deletes past its retention, one row per table. Every worker may run
 * these, as the deletes are idempotent; each runs once at start, then on its interval.
 */
export function scheduleWorkerRetention(
  deps: Pick<
    WorkerDeps,
    | 'logger'
    | 'creationRequests'
    | 'idempotencyKeys'
    | 'installs'
    | 'linkDimensionDays'
    | 'analyticsPartitions'
    | 'webhookRetention'
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
      // Click analytics: hourly rows kept ANALYTICS_HOURLY_RETENTION_DAYS, daily rows and monthly
      // totals ANALYTICS_DAILY_RETENTION_DAYS, the admitted dimension values two days.
      ...ANALYTICS_TABLES.map((table) => analyticsRetention(deps, table)),
      // Webhooks: finished deliveries and their events kept WEBHOOK_RETENTION_DAYS; install
      // events (personal data) only until sent.
      ...webhookRetentionTasks(deps.webhookRetention, config),
    ],
    deps.logger,
  );
}
