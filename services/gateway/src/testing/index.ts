export * from './gateway-harness';
