export { startCreationWorker } from './worker';
export type { CreationWorkerDeps } from './worker';
export { LinkCreationService } from './create-links.service';
export { LinksRepository } from './links.repository';
export { loadConfig, workerEnvSchema } from './config';
export type { WorkerConfig } from './config';
// For other services' in-process tests (the gateway's creation stack).
export { InProcessWorkers } from './testing/in-process-workers';
