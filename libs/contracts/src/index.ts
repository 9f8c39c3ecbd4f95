export * from './app-association';
export * from './link';
export * from './link-fields';
export * from './link-input';
export * from './link-url';
export { LIMITS as LINK_INPUT_LIMITS, parseZonedTimestamp } from './link-input-fields';
export * from './reserved-aliases';
