import { combinedLoad } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { ApiError, errors } from '../http/errors';
import type { BodyRead } from '../http/json-body';
import { readJsonBody } from '../http/json-body';
import type { ApiRoute } from '../http/routes';
import { sendJson } from '../http/send-json';
import { parseResolveRequest } from './resolve-request';
import type { ResolveOutcome } from './resolve.service';
import { resolveLinkDoc } from './resolve.openapi';

/** One body for every URL that names no link the key may read, whatever the reason. */
const NOT_FOUND = 'No such link.';

/** What resolve's authenticated load found: the outcome, or why the body is refused. */
type ResolveLoad = ResolveOutcome | { kind: 'refused'; error: unknown };

/** The URL to resolve, or the error that refuses the body (400 or 413 as read, else 422). */
function resolveRequestOf(
  read: BodyRead,
): { ok: true; url: string } | { ok: false; error: unknown } {
  if (!read.ok) return read;
  const parsed = parseResolveRequest(read.body);
  return parsed.ok ? parsed : { ok: false, error: errors.invalidRequest(parsed.fields) };
}

/** POST /sdk/resolve (app-interface.md), mounted under /api/v1/sdk. */
export function resolveRoutes(deps: GatewayDeps): ApiRoute[] {
  const { keys, resolve } = deps;
  /**
   * The body names the link, so it is read before the key is checked: a valid body costs one
   * statement (the key check and the link read together). A refused body costs the plain key
   * lookup, and is answered (400, 413 or 422) only once the key is accepted: a bad key is 401
   * whatever the body.
   */
  const resolveLoad = combinedLoad<ResolveLoad>(async (keyHash, req, res) => {
    const request = resolveRequestOf(await readJsonBody(req, res));
    if (request.ok) return resolve.resolveForKey(keyHash, request.url);
    const auth = await keys.findActiveByHash(keyHash);
    return auth && { auth, loaded: { kind: 'refused', error: request.error } };
  });

  return [
    {
      method: 'POST',
      path: '/resolve',
      openapi: resolveLinkDoc,
      authenticatedLoad: resolveLoad.authenticate,
      handler: (_req, res) => {
        const loaded = resolveLoad.loadedOf(res);
        switch (loaded.kind) {
          case 'resolved':
            sendJson(res, loaded.answer);
            return;
          case 'not_found':
            throw errors.notFound(NOT_FOUND);
          case 'expired':
            throw new ApiError('expired', 'The link has expired.');
          case 'refused':
            // jsonBody() already answered a body that could not be read; this is the 422.
            throw loaded.error;
        }
      },
    },
  ];
}
