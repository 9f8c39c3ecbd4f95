import type { RequestHandler } from 'express';
import { withQueryDeadline } from '@linkservice/db';

/**
 * Opens the request's Postgres deadline scope (withQueryDeadline): every query the request runs,
 * and every wait for a pool connection, ends by `budgetMs` after the request arrived. Over a
 * frozen or unreachable database the query fails and the error middleware answers 503
 * `unavailable` with Retry-After (dependency-failure.ts), within the budget plus a few ms.
 *
 * The scope follows the request through awaits (AsyncLocalStorage). Callbacks of the request
 * stream run in the socket's context instead, so the body reader rebinds its callback to the
 * request's (json-body.ts). A creation's settle opens its own, longer scope on purpose.
 */
export function requestBudget(budgetMs: number): RequestHandler {
  return (_req, _res, next) => {
    withQueryDeadline(budgetMs, () => {
      next();
    });
  };
}
