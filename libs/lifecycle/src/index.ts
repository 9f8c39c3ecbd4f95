export * from './http-server';
export * from './process';
export * from './readiness';
export * from './redis';
