export * from './app-association';
export * from './link';
export { LINK_FIELDS } from './link-field-table';
export * from './link-fields';
export * from './link-input';
export * from './link-status.cases';
export * from './link-url';
export { LIMITS as LINK_INPUT_LIMITS, parseZonedTimestamp } from './link-input-rules';
export * from './reserved-aliases';
