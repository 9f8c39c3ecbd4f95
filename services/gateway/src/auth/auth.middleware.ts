import type { Request, RequestHandler, Response } from 'express';
import type { Environment } from '@linkservice/db';
import { hashSecretKey, parseSecretKey } from '@linkservice/keys';
import { ApiError } from '../http/errors';
import type { AuthContext, Authenticated } from './auth-context';
import type { KeysRepository } from './keys.repository';

const BEARER = /^bearer +(\S+)$/i;

/** A well-formed secret key as the request presents it: its hash, and the environment it names. */
export interface PresentedKey {
  hash: Buffer;
  environment: Environment;
}

/** Missing, malformed, unknown, revoked, publishable or mismatched: one indistinguishable answer. */
function unauthorised(): ApiError {
  return new ApiError('unauthorised', 'A valid secret API key is required.', {
    headers: { 'WWW-Authenticate': 'Bearer' },
  });
}

/**
 * First for every /api/v1 request, matched or not: `Authorization: Bearer <secret key>` must hold
 * a well-formed secret key, else 401. No database work: a key that is not well-formed never
 * reaches it. Looking the key up is authenticate()'s job, or a route's combinedLoad()'s.
 */
export function readBearerKey(): RequestHandler {
  return (req, res, next) => {
    const secret = BEARER.exec(req.get('authorization') ?? '')?.[1];
    const parsed = secret === undefined ? null : parseSecretKey(secret);
    if (secret === undefined || parsed === null) throw unauthorised();
    const key: PresentedKey = { hash: hashSecretKey(secret), environment: parsed.environment };
    res.locals.presentedKey = key;
    next();
  };
}

function presentedKeyOf(res: Response): PresentedKey {
  const key = res.locals.presentedKey as PresentedKey | undefined;
  if (!key) throw new Error('readBearerKey() did not run for this route');
  return key;
}

/**
 * The one rule for a key record, however it was found: it must exist (unrevoked), and its
 * environment must be the one the key's text names. The environment then comes from the record.
 */
function accept(res: Response, found: AuthContext | undefined): void {
  if (!found || found.environment !== presentedKeyOf(res).environment) throw unauthorised();
  res.locals.auth = found;
}

/**
 * Looks up the presented key (readBearerKey() ran first) for every /api/v1 request whose route
 * does not authenticate with a combined load. Runs at most once per request.
 */
export function authenticate(keys: KeysRepository): RequestHandler {
  return async (_req, res, next) => {
    if (res.locals.auth === undefined) {
      accept(res, await keys.findActiveByHash(presentedKeyOf(res).hash));
    }
    next();
  };
}

export interface CombinedLoad<T> {
  /** The route's `authenticatedLoad`: runs in place of authenticate(), with the same outcome. */
  authenticate: RequestHandler;
  /** In the route's handler: what the load read for this request. */
  loadedOf(res: Response): T;
}

/**
 * For a hot route whose repository can check the key and read what the route needs in one
 * statement (activeKeyStatement with a join): one round trip instead of the lookup's plus the
 * read's. `load` gets the presented key's hash and answers undefined when no active key has it;
 * the found record then passes the same rule as authenticate()'s, before the handler runs.
 */
export function combinedLoad<T>(
  load: (keyHash: Buffer, req: Request) => Promise<Authenticated<T> | undefined>,
): CombinedLoad<T> {
  const loads = new WeakMap<Response, T>();
  return {
    authenticate: async (req, res, next) => {
      const found = await load(presentedKeyOf(res).hash, req);
      if (!found) throw unauthorised();
      accept(res, found.auth);
      loads.set(res, found.loaded);
      next();
    },
    loadedOf(res) {
      if (!loads.has(res)) throw new Error('the combined load did not run for this route');
      return loads.get(res) as T;
    },
  };
}

/** The caller of an /api/v1 route; authentication ran before every one of them. */
export function authOf(res: Response): AuthContext {
  const auth = res.locals.auth as AuthContext | undefined;
  if (!auth) throw new Error('authenticate() did not run for this route');
  return auth;
}
