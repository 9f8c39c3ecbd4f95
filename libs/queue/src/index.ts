export * from './create-links.job';
export * from './creation-client';
export * from './creation-requests.repository';
export * from './redis-options';
