export * from './keys';
export * from './resolution';
export * from './link-cache';
export * from './click-tokens';
export * from './redis-calls';
