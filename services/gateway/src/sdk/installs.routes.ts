import type { Request } from 'express';
import { authOf } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { errors } from '../http/errors';
import { bodyOf } from '../http/json-body';
import type { ApiRoute } from '../http/routes';
import { sendJson } from '../http/send-json';
import { parseInstallRequest } from './install-request';
import { eraseInstallDoc, reportInstallDoc } from './installs.openapi';

/** The header an installation proves itself with when it erases its data. */
export const INSTALL_SECRET_HEADER = 'x-install-secret';

/**
 * One body for every erasure that finds nothing to erase: unknown id, wrong or missing secret,
 * another app's or environment's install, or one already erased.
 */
const NO_SUCH_INSTALL = 'No such install.';

/** The header's value when sent once; a repeated header is no secret of ours. */
function installSecretOf(req: Request): string | undefined {
  const value = req.headers[INSTALL_SECRET_HEADER];
  return typeof value === 'string' ? value : undefined;
}

/** POST /sdk/installs and DELETE /sdk/installs/{installId} (app-interface.md). */
export function installsRoutes(deps: GatewayDeps): ApiRoute[] {
  const { installs } = deps;
  return [
    {
      method: 'POST',
      path: '/installs',
      openapi: reportInstallDoc,
      handler: async (req, res) => {
        const parsed = parseInstallRequest(bodyOf(req));
        if (!parsed.ok) throw errors.invalidRequest(parsed.fields);
        sendJson(res, await installs.report(authOf(res), parsed.value), { status: 201 });
      },
    },
    {
      method: 'DELETE',
      path: '/installs/:installId',
      openapi: eraseInstallDoc,
      handler: async (req, res) => {
        const erased = await installs.erase(
          authOf(res),
          String(req.params.installId),
          installSecretOf(req),
        );
        if (!erased) throw errors.notFound(NO_SUCH_INSTALL);
        sendJson(res, erased);
      },
    },
  ];
}
