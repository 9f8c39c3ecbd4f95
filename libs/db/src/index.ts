export * from './schema';
export * from './pool';
export {
  currentQueryDeadline,
  QueryDeadlineExceeded,
  queryBudget,
  withQueryDeadline,
} from './query-deadline';
export type { QueryBudget } from './query-deadline';
export * from './ids';
export { ensureDatabase, migrateToLatest } from './migrate';
export type { MigrateOutcome } from './migrate';
export { parseLsn, primaryWalPosition, replayCovers, ReplicaReads } from './replica-reads';
export type {
  FencedRead,
  PrimaryReason,
  ReadFence,
  ReadSource,
  ReplayPosition,
  ReplicaReadsOptions,
} from './replica-reads';
export * from './write-fences';
