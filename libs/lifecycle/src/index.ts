export * from './process';
export * from './readiness';
export * from './redis';
