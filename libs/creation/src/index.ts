export * from './creation-job.contract';
export * from './creation-client';
export * from './creation-requests.repository';
export * from './creation-transaction';
export * from './group-gatherer';
export * from './pre-group-commit.compat';
export * from './redis-options';
export * from './idempotency-keys.repository';
