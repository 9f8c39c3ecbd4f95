import type { Request, RequestHandler, Response } from 'express';
import type { Environment, KeyType } from '@linkservice/db';
import { hashSecretKey, parseApiKey } from '@linkservice/keys';
import { setSpanAttributes } from '@linkservice/telemetry';
import { ApiError } from '../http/errors';
import type { AuthContext, Authenticated } from './auth-context';
import type { KeysRepository } from './keys.repository';

const BEARER = /^bearer +(\S+)$/i;

/** The keys a router accepts, and the one 401 message every refusal on that router carries. */
export interface KeyKind {
  type: KeyType;
  message: string;
}

/** The server API under /api/v1. */
export const SECRET_KEYS: KeyKind = {
  type: 'secret',
  message: 'A valid secret API key is required.',
};

/** The app interface under /api/v1/sdk: a secret key there is refused like any bad key. */
export const PUBLISHABLE_KEYS: KeyKind = {
  type: 'publishable',
  message: 'A valid publishable key is required.',
};

/** A well-formed key of the router's kind as the request presents it. */
export interface PresentedKey {
  hash: Buffer;
  /** The environment the key's text names; the record must name the same. */
  environment: Environment;
  /** What the router accepts; the record must be of its type too. */
  kind: KeyKind;
}

/**
 * Missing, malformed, unknown, revoked, of the other type or mismatched: one indistinguishable
 * answer per kind.
 */
function unauthorised(kind: KeyKind): ApiError {
  return new ApiError('unauthorised', kind.message, {
    headers: { 'WWW-Authenticate': 'Bearer' },
  });
}

/**
 * First for every request of a router, matched or not: `Authorization: Bearer <key>` must hold a
 * well-formed key of `kind` (its text names the type), else 401. No database work: a key that
 * is not well-formed, or names the other type, never reaches it. Looking the key up is
 * authenticate()'s job, or a route's combinedLoad()'s.
 */
export function readBearerKey(kind: KeyKind = SECRET_KEYS): RequestHandler {
  return (req, res, next) => {
    const text = BEARER.exec(req.get('authorization') ?? '')?.[1];
    const parsed = text === undefined ? null : parseApiKey(text);
    if (text === undefined || parsed === null || parsed.type !== kind.type) {
      throw unauthorised(kind);
    }
    const key: PresentedKey = { hash: hashSecretKey(text), environment: parsed.environment, kind };
    res.locals.presentedKey = key;
    next();
  };
}

function presentedKeyOf(res: Response): PresentedKey {
  const key = res.locals.presentedKey as PresentedKey | undefined;
  if (!key) throw new Error('readBearerKey() did not run for this route');
  return key;
}

/** A verdict begun beside the key check: nothing to say, or the error that ends the request. */
type Verdict = Promise<{ error: unknown } | undefined>;

/**
 * After readBearerKey(): begins `decide` at once, beside the key's database lookup, so the
 * request waits for the slower of the two rather than both (the SDK's abuse limit). Its outcome
 * is heard only once the key is accepted: a refused key is 401 whatever `decide` says (over a
 * limit, its store down). `decide` rejects with the error to answer instead.
 */
export function besideKeyCheck(
  decide: (req: Request, key: PresentedKey) => Promise<void>,
): RequestHandler {
  return (req, res, next) => {
    // Settled into a value now: a verdict nobody hears (a refused key, the database down) must
    // not become an unhandled rejection.
    const verdict: Verdict = decide(req, presentedKeyOf(res)).then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    res.locals.keyCheckVerdict = verdict;
    next();
  };
}

/**
 * The one rule for a key record, however it was found: it must exist (unrevoked), be of the
 * router's type, and name the environment the key's text names. The environment then comes
 * from the record. Then the verdict begun beside the check, if any.
 */
async function accept(res: Response, found: AuthContext | undefined): Promise<void> {
  const presented = presentedKeyOf(res);
  if (!found || found.type !== presented.kind.type || found.environment !== presented.environment) {
    throw unauthorised(presented.kind);
  }
  const pending = res.locals.keyCheckVerdict as Verdict | undefined;
  if (pending) {
    const verdict = await pending;
    if (verdict) throw verdict.error;
  }
  res.locals.auth = found;
  // On the request's span, once the key is known good: who called, never the key itself.
  setSpanAttributes({
    'linkservice.app_id': found.appId,
    'linkservice.environment': found.environment,
  });
}

/**
 * Looks up the presented key (readBearerKey() ran first) for every request whose route does not
 * authenticate with a combined load. Runs at most once per request.
 */
export function authenticate(keys: KeysRepository): RequestHandler {
  return async (_req, res, next) => {
    if (res.locals.auth === undefined) {
      await accept(res, await keys.findActiveByHash(presentedKeyOf(res).hash));
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
 * `load` may read the body itself (readJsonBody) when what it reads depends on it.
 */
export function combinedLoad<T>(
  load: (keyHash: Buffer, req: Request, res: Response) => Promise<Authenticated<T> | undefined>,
): CombinedLoad<T> {
  const loads = new WeakMap<Response, T>();
  return {
    authenticate: async (req, res, next) => {
      const presented = presentedKeyOf(res);
      const found = await load(presented.hash, req, res);
      await accept(res, found?.auth);
      if (found) loads.set(res, found.loaded); // else accept() threw

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
