export * from './app-association';
export * from './link';
export * from './link-draft';
export * from './link-input';
export type { EditableField, LinkChanges } from './link-input-fields';
export { LIMITS as LINK_INPUT_LIMITS, parseZonedTimestamp } from './link-input-fields';
export * from './reserved-aliases';
