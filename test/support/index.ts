export * from './database';
export * from './http';
export * from './ports';
export * from './stack';
export * from './tenants';
