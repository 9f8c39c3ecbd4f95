import type { Request, Response } from 'express';
import { authOf } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { errors } from '../http/errors';
import type { ApiRoute } from '../http/routes';
import { pathParam } from '../http/routes';
import { sendJson } from '../http/send-json';
import { PLAUSIBLE_ID, linkOwnerOf } from '../links/links.service';
import { parseAnalyticsQuery } from './analytics-params';
import type { AnalyticsQuery } from './analytics-params';
import { getAnalyticsDoc, getLinkAnalyticsDoc } from './analytics.openapi';

const NOT_FOUND = 'No such link.';

function queryOf(req: Request, allowTag: boolean): AnalyticsQuery {
  const parsed = parseAnalyticsQuery(req.query, {
    allowTag,
    now: new Date(),
  });
  if (!parsed.ok) throw errors.invalidRequest(parsed.fields);
  return parsed.query;
}

/** Click analytics of a link, and of the app and environment of the key. */
export function analyticsRoutes(deps: GatewayDeps): ApiRoute[] {
  const { analytics } = deps;
  const ownerOf = (res: Response) => linkOwnerOf(authOf(res));
  return [
    {
      method: 'GET',
      path: '/links/:linkId/analytics',
      openapi: getLinkAnalyticsDoc,
      handler: async (req, res) => {
        const query = queryOf(req, false);
        const linkId = pathParam(req, 'linkId');
        const answer = PLAUSIBLE_ID.test(linkId)
          ? await analytics.forLink(ownerOf(res), linkId, query)
          : undefined;
        if (!answer) throw errors.notFound(NOT_FOUND);
        sendJson(res, { analytics: answer });
      },
    },
    {
      method: 'GET',
      path: '/analytics',
      openapi: getAnalyticsDoc,
      handler: async (req, res) => {
        sendJson(res, { analytics: await analytics.forApp(ownerOf(res), queryOf(req, true)) });
      },
    },
  ];
}
