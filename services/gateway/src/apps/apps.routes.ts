import { authOf } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { errors } from '../http/errors';
import type { ApiRoute } from '../http/routes';
import { pathParam } from '../http/routes';
import { sendJson } from '../http/send-json';
import { getAppDoc, getCurrentAppDoc } from './apps.openapi';

export function appsRoutes(deps: GatewayDeps): ApiRoute[] {
  const { apps } = deps;
  return [
    {
      method: 'GET',
      path: '/app',
      openapi: getCurrentAppDoc,
      handler: (_req, res) => {
        sendJson(res, apps.current(authOf(res)));
      },
    },
    {
      method: 'GET',
      path: '/apps/:appId',
      openapi: getAppDoc,
      handler: (req, res) => {
        const view = apps.byId(authOf(res), pathParam(req, 'appId'));
        if (!view) throw errors.notFound('No such app.');
        sendJson(res, view);
      },
    },
  ];
}
