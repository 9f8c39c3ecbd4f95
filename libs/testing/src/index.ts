export * from './environment';
export * from './eventually';
export * from './tenants';
