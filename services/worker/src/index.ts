export { startCreationWorker } from './worker';
export { buildDeps } from './deps';
export type { WorkerClients, WorkerDeps, WorkerResources } from './deps';
export { LinkCreationService } from './create-links.service';
export { LinksRepository } from './links.repository';
export { loadConfig, workerEnvSchema } from './config';
export type { WorkerConfig } from './config';
// For other services' in-process tests (the gateway's creation stack).
export { InProcessWorkers } from './testing/in-process-workers';
