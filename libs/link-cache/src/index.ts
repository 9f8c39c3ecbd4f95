export * from './link-host-keys';
export * from './resolution';
export * from './link-cache';
export * from './click-token-store';
export * from './link-host-keys.compat';
