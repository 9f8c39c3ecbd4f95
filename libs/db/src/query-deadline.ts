import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * Client-side deadlines for Postgres queries. A server-side statement_timeout cannot fire in a
 * server that is frozen (SIGSTOP, a network blackhole, a stuck failover): only the client's own
 * clock can end the wait. Pools made by createDb() give every query
 *  - what is left of the innermost withQueryDeadline() scope around the caller, or else
 *  - the pool's `queryTimeoutMs` (a default for work outside any scope),
 * and close a connection whose query ran out of time (see pool.ts). A scope replaces the pool
 * default rather than tightening it: the creation settle may wait on a row lock longer than an
 * API read may take.
 */

/** A query refused or abandoned because its scope's deadline had passed. */
export class QueryDeadlineExceeded extends Error {
  override readonly name = 'QueryDeadlineExceeded';

  constructor(message = 'query deadline exceeded') {
    super(message);
  }
}

interface DeadlineScope {
  /** Epoch ms. */
  readonly deadline: number;
}

const scopes = new AsyncLocalStorage<DeadlineScope>();

/**
 * Runs `fn` with every query it starts (awaited or not, through any pool of createDb) bounded
 * by `timeoutMs` from now, in all: a query started when 800 ms remain gets 800 ms. The innermost
 * scope decides, so a step that must outlive the request's budget (the creation settle) opens its
 * own scope on purpose.
 */
export function withQueryDeadline<T>(timeoutMs: number, fn: () => T): T {
  return scopes.run({ deadline: Date.now() + timeoutMs }, fn);
}

/** Epoch ms of the current scope's deadline, if any. */
export function currentQueryDeadline(): number | undefined {
  return scopes.getStore()?.deadline;
}

/** What a query starting now may take: no bound, this many ms, or nothing (deadline passed). */
export type QueryBudget =
  { kind: 'unbounded' } | { kind: 'bounded'; ms: number } | { kind: 'expired' };

/**
 * The bound for a query starting at `now`: the scope's remaining time when there is a scope,
 * the pool default otherwise (none when it is unset or 0). pg's timer takes whole ms.
 */
export function queryBudget(
  now: number,
  scopeDeadline: number | undefined,
  poolTimeoutMs: number | undefined,
): QueryBudget {
  if (scopeDeadline !== undefined) {
    const remaining = scopeDeadline - now;
    return remaining <= 0 ? { kind: 'expired' } : { kind: 'bounded', ms: Math.ceil(remaining) };
  }
  if (poolTimeoutMs === undefined || poolTimeoutMs <= 0) return { kind: 'unbounded' };
  return { kind: 'bounded', ms: Math.ceil(poolTimeoutMs) };
}
