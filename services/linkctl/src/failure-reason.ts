import { ConfigError } from '@linkservice/config';
import { pgErrorCode } from './pg-errors';

/** Socket-level codes of a database that cannot be reached at all. */
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  '57P03', // cannot_connect_now: the server is starting or shutting down
]);

/**
 * One line saying why a command failed, for an operator: no stack trace, no password. Known
 * causes get a remedy; anything else keeps the error's own first line.
 */
export function describeFailure(error: unknown, databaseUrl?: string): string {
  if (error instanceof ConfigError) return `invalid configuration: ${error.problems.join('; ')}`;

  const cause = firstCause(error);
  const code = pgErrorCode(cause);
  const message = firstLine(cause instanceof Error ? cause.message : String(cause));
  const where = databaseUrl ? ` at ${safeLocation(databaseUrl)}` : '';

  if (
    (code !== undefined && (UNREACHABLE_CODES.has(code) || code.startsWith('08'))) ||
    /timeout exceeded when trying to connect|connection terminated/i.test(message)
  ) {
    return `cannot reach the database${where}: ${message || code || 'connection failed'}`;
  }
  if (code === '3D000') return `${message}; run linkctl migrate to create it`;
  if (code === '42P01')
    return `the database${where} has no linkservice schema (${message}); run linkctl migrate`;
  if (code === '28P01' || code === '28000')
    return `the database${where} refused the login: ${message}`;
  return message || 'unexpected failure';
}

/**
 * Node reports a host with several addresses (localhost: ::1 and 127.0.0.1) that all refuse as
 * an AggregateError with an empty message; its first error says what happened.
 */
function firstCause(error: unknown): unknown {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors[0];
  return error;
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]?.trim() ?? '';
}

/** host:port/database, without user or password. */
function safeLocation(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.host}${url.pathname}`;
  } catch {
    return 'the configured DATABASE_URL';
  }
}
