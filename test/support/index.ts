export * from './database';
export * from './stack';
export * from './tenants';
export * from './linkctl';
