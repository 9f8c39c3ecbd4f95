import type { RequestHandler, Response } from 'express';
import { hashSecretKey, parseSecretKey } from '@linkservice/keys';
import { ApiError } from '../http/errors';
import type { AuthContext } from './auth-context';
import type { KeysRepository } from './keys.repository';

const BEARER = /^bearer +(\S+)$/i;

/** Missing, malformed, unknown, revoked, publishable or mismatched: one indistinguishable answer. */
function unauthorised(): ApiError {
  return new ApiError('unauthorised', 'A valid secret API key is required.', {
    headers: { 'WWW-Authenticate': 'Bearer' },
  });
}

/**
 * Authenticates every /api/v1 request with `Authorization: Bearer <secret key>`. A key that is
 * not well-formed never reaches the database. The environment comes from the key record, and a
 * record whose environment differs from the one the key's text names is refused.
 */
export function authenticate(keys: KeysRepository): RequestHandler {
  return async (req, res, next) => {
    const secret = BEARER.exec(req.get('authorization') ?? '')?.[1];
    const parsed = secret === undefined ? null : parseSecretKey(secret);
    if (secret === undefined || parsed === null) throw unauthorised();

    const context = await keys.findActiveByHash(hashSecretKey(secret));
    if (!context || context.environment !== parsed.environment) throw unauthorised();

    res.locals.auth = context;
    next();
  };
}

/** The caller of an /api/v1 route; authenticate() ran before every one of them. */
export function authOf(res: Response): AuthContext {
  const auth = res.locals.auth as AuthContext | undefined;
  if (!auth) throw new Error('authenticate() did not run for this route');
  return auth;
}
