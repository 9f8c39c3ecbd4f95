export * from './bounded';
export * from './http-metrics';
export * from './metrics-server';
export * from './registry';
export { Counter, Gauge, Histogram } from 'prom-client';
export type { Registry } from 'prom-client';
export * from './replica-metrics';
