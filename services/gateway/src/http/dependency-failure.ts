/**
 * Whether an error means Postgres or Redis could not be reached (as opposed to a bug): those
 * requests get 503 `unavailable` with Retry-After instead of 500 `internal`.
 */

/** Socket-level failures, as Node reports them for pg and ioredis connections alike. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
]);

/**
 * SQLSTATEs Postgres sends when the server, not the query, is the problem: class 08 (connection
 * exception), shutdown and start-up (57P01-57P03), too many connections (53300), and a statement
 * ended by statement_timeout (57014: the server is too slow to answer within the bound).
 */
const POSTGRES_UNAVAILABLE = /^(08...|57P0[123]|57014|53300)$/;

/** Messages without a code: pg pool/client and ioredis and rate-limiter-flexible wording. */
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/, // pg: server went away mid-query, or connectionTimeoutMillis hit
  /^timeout exceeded when trying to connect$/, // pg pool: no connection in time
  /^Client has encountered a connection error and is not queryable$/, // pg
  /^Cannot use a pool after calling end on the pool$/, // pg, while shutting down
  /^Connection is closed\.?$/, // ioredis
  /^Stream isn't writeable and enableOfflineQueue options is false$/, // ioredis
  /^Redis connection is not ready$/, // rate-limiter-flexible with rejectIfRedisNotReady
  /^Query read timeout$/, // pg: a query's client-side query_timeout passed
  /^Command timed out$/, // ioredis: commandTimeout passed
];

/** Errors that say a deadline of ours passed while waiting on a dependency. */
const DEADLINE_NAMES = new Set([
  'MaxRetriesPerRequestError', // ioredis gave up on a command
  'QueryDeadlineExceeded', // @linkservice/db: the request's query deadline passed
]);

export function isDependencyFailure(error: unknown, depth = 0): boolean {
  if (depth > 5 || typeof error !== 'object' || error === null) return false;
  const { code, name, message, errors, cause } = error as {
    code?: unknown;
    name?: unknown;
    message?: unknown;
    errors?: unknown;
    cause?: unknown;
  };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || POSTGRES_UNAVAILABLE.test(code))) {
    return true;
  }
  if (typeof name === 'string' && DEADLINE_NAMES.has(name)) return true;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((m) => m.test(message))) {
    return true;
  }
  // Node's happy-eyeballs connect reports one AggregateError for all addresses it tried.
  if (Array.isArray(errors) && errors.some((e) => isDependencyFailure(e, depth + 1))) return true;
  return isDependencyFailure(cause, depth + 1);
}
