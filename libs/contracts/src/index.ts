export * from './link';
export * from './link-draft';
