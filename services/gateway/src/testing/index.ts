export * from './gateway-harness';
export * from './tenants';
export * from './ports';
export * from './raw-request';
