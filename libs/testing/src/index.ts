export * from './environment';
export * from './eventually';
