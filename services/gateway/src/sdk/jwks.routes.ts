import type { GatewayDeps } from '../deps';
import type { ApiRoute } from '../http/routes';
import { sendJson } from '../http/send-json';

/** Where the erasure receipts' verification key is published (app-interface.md). */
export const JWKS_PATH = '/.well-known/jwks.json';

/**
 * GET /.well-known/jwks.json: the public key that verifies erasure receipts, outside /api/v1
 * and without auth. Public data, so any origin may read it and caches may keep it a while.
 */
export function jwksRoutes(deps: GatewayDeps): ApiRoute[] {
  const body = deps.receipts.jwks();
  return [
    {
      method: 'GET',
      path: JWKS_PATH,
      handler: (_req, res) => {
        sendJson(res, body, {
          headers: { 'Cache-Control': 'public, max-age=300', 'Access-Control-Allow-Origin': '*' },
        });
      },
    },
  ];
}
