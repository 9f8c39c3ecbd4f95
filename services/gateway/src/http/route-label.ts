import type { Request, RequestHandler, Response } from 'express';
import { UNMATCHED_ROUTE } from '@linkservice/metrics';

const ROUTE = Symbol('routeLabel');

type LabelledResponse = Response & { [ROUTE]?: string };

/**
 * The first handler of a mounted route: remembers its pattern with the router's mount path
 * (`/api/v1` + `/links/:linkId`), the `route` label of the request's metrics. Read at the route,
 * because once an error leaves the router express has already restored `req.baseUrl`.
 */
export function labelRoute(path: string): RequestHandler {
  return (req: Request, res: LabelledResponse, next) => {
    res[ROUTE] = req.baseUrl + path;
    next();
  };
}

/**
 * The route pattern a request matched, or `unmatched` when it was answered before reaching one:
 * an unknown path, or a refusal before routing such as the SDK abuse limit's 429. Never its path.
 */
export function routeLabelOf(res: Response): string {
  return (res as LabelledResponse)[ROUTE] ?? UNMATCHED_ROUTE;
}
