export * from './gateway-harness';
export * from './statement-counter';
