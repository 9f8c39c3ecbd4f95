export * from './api-body';
export * from './database';
export * from './environment';
export * from './eventually';
export * from './http';
export * from './ports';
export * from './links';
export * from './tenants';
