export { startCreationWorker } from './worker';
export { startWebhookDelivery } from './webhooks/webhook-delivery';
export type { WebhookDelivery, WebhookDeliveryOptions } from './webhooks/webhook-delivery';
export { buildDeps } from './deps';
export type { WorkerClients, WorkerDeps, WorkerResources } from './deps';
export { CreationGroupWriter } from './creation-group.writer';
export { LinkInserts } from './link-inserts.repository';
export { loadConfig, workerEnvSchema } from './config';
export type { WorkerConfig } from './config';
// For other services' in-process tests (the gateway's creation stack).
export { InProcessWorkers } from './testing/in-process-workers';
// The derivation of links' dimension rows and the monthly partitions, for the bench's analytics
// app (test/bench/analytics.ts).
export { LinkDimensionDaysRepository } from './analytics/link-dimension-days.repository';
export { AnalyticsPartitionsRepository } from './analytics/analytics-partitions.repository';
export { ANALYTICS_TABLES } from './analytics/analytics-months';
