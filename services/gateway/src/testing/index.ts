export * from './gateway-harness';
export * from './ports';
