export * from './database';
export * from './ports';
export * from './stack';
export * from './tenants';
