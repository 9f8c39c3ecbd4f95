import type { Request, RequestHandler } from 'express';
import { withQueryDeadline } from '@linkservice/db';

/**
 * Opens the request's Postgres deadline scope (withQueryDeadline): every query the request runs,
 * and every wait for a pool connection, ends by `budgetMs` after the request arrived. Over a
 * frozen or unreachable database the query fails and the error middleware answers 503
 * `unavailable` with Retry-After (dependency-failure.ts), within the budget plus a few ms.
 *
 * The scope follows the request through awaits (AsyncLocalStorage). Callbacks of the request
 * stream run in the socket's context instead, so the body reader rebinds its callback to the
 * request's (json-body.ts), and starts the budget afresh (`afterBody`): the client's upload
 * time is not Postgres' to spend. A creation's settle opens its own, longer scope on purpose.
 */
export function requestBudget(budgetMs: number): RequestHandler {
  return (req, _res, next) => {
    budgets.set(req, budgetMs);
    withQueryDeadline(budgetMs, () => {
      next();
    });
  };
}

const budgets = new WeakMap<Request, number>();

/**
 * Runs `fn`, the request's work once its body has arrived, with the request's budget started
 * again: a slow upload is the client's time, and must not turn a healthy database's query into a
 * 503. Without a budget (a request that did not pass requestBudget), `fn` as it is.
 */
export function afterBody<T>(req: Request, fn: () => T): T {
  const budgetMs = budgets.get(req);
  return budgetMs === undefined ? fn() : withQueryDeadline(budgetMs, fn);
}
