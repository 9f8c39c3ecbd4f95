import type { Logger, LoggerOptions } from 'pino';
import { pino } from 'pino';

export type { Level, Logger } from 'pino';
export { REQUEST_ID_HEADER, requestIdFrom } from './request-id';

/**
 * Paths that may carry a secret key. Redaction is the last line of defence: code never logs a
 * key on purpose, and request logging never logs headers unredacted.
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'secret',
  '*.secret',
  'key_hash',
  '*.key_hash',
];

export function createLogger(
  service: string,
  level: LoggerOptions['level'] = 'info',
  destination?: pino.DestinationStream,
): Logger {
  const options: LoggerOptions = {
    level,
    base: { service },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  };
  return destination ? pino(options, destination) : pino(options);
}
export { throttledErrorLog } from './error-throttle';
export type { ErrorLogThrottleOptions } from './error-throttle';
