export * from './create-links.job';
export * from './creation-client';
export * from './creation-requests.cleanup';
export * from './creation-requests.repository';
export * from './creation-transaction';
export * from './redis-options';
export * from './idempotency-keys.repository';
