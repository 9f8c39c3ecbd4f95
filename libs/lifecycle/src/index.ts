export * from './http-server';
export * from './probe-server';
export * from './probes';
export * from './postgres';
export * from './process';
export * from './readiness';
export * from './redis';
export * from './service';
