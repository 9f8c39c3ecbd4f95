export * from './gateway-harness';
export * from './ports';
export * from './raw-request';
