// For in-process harnesses of other packages (e.g. an end-to-end test that runs the link host
// beside the gateway): the same pieces main.ts wires.
export { createApp } from './app';
export type { AppOptions } from './app';
export { buildDeps } from './deps';
export type { RedirectClients, RedirectDeps, RedirectResources } from './deps';
export { loadConfig, redirectEnvSchema } from './config';
export type { RedirectConfig } from './config';
// The flush statement itself, for the bench's clicks (test/bench/clicks.ts).
export { ClickBatchesRepository } from './clicks/click-batches.repository';
// The pending hash's dimension fields, for tests that apply batches shaped like the link host's.
export { encodeDimensions } from './analytics/click-analytics';
