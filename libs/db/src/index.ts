export * from './schema';
export * from './pool';
export * from './ids';
export { ensureDatabase, migrateToLatest } from './migrate';
export type { MigrateOutcome } from './migrate';
