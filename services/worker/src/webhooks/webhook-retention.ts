import type { RetentionTask } from '@linkservice/lifecycle';
import type { WorkerConfig } from '../config';
import type { WebhookRetentionRepository } from './webhook-retention.repository';

/** How often the webhook tables are cut back to WEBHOOK_RETENTION_DAYS (a day is its unit). */
const WEBHOOK_RETENTION_EVERY_MS = 60 * 60 * 1000;

/**
 * How often install.* events that were sent are deleted: personal data, so soon after their
 * last delivery finished rather than at the retention.
 */
const SENT_INSTALL_EVENTS_EVERY_MS = 60 * 1000;

/** The webhook tables' rows of the worker's retention schedule (retention.ts). */
export function webhookRetentionTasks(
  retention: WebhookRetentionRepository,
  config: Pick<WorkerConfig, 'WEBHOOK_RETENTION_DAYS'>,
): RetentionTask[] {
  const days = config.WEBHOOK_RETENTION_DAYS;
  return [
    {
      // In order in each slice, so the events a slice's deletes leave bare go in the same run.
      // The sum is at least `limit` whenever one delete was full: the schedule goes on until
      // every one comes back short.
      label: 'webhook deliveries and events',
      deleteSlice: async (limit) => {
        const finished = await retention.deleteFinishedDeliveries(days, limit);
        const abandoned = await retention.deleteAbandonedDeliveries(days, limit);
        const events = await retention.deleteOrphanEvents(days, limit);
        return finished + abandoned + events;
      },
      intervalMs: WEBHOOK_RETENTION_EVERY_MS,
      sliceSize: 1_000,
    },
    {
      label: 'sent install webhook events',
      deleteSlice: (limit) => retention.deleteSentInstallEvents(limit),
      intervalMs: SENT_INSTALL_EVENTS_EVERY_MS,
      sliceSize: 1_000,
    },
  ];
}
