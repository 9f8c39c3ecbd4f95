export * from './api-body';
export * from './environment';
export * from './eventually';
export * from './http';
export * from './links';
export * from './tenants';
