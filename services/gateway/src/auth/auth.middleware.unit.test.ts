import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { generatePublishableKey, generateSecretKey, hashSecretKey } from '@linkservice/keys';
import { ApiError } from '../http/errors';
import type { AuthContext } from './auth-context';
import {
  authenticate,
  besideKeyCheck,
  combinedLoad,
  PUBLISHABLE_KEYS,
  readBearerKey,
  SECRET_KEYS,
} from './auth.middleware';
import type { KeysRepository } from './keys.repository';

/** The key rules and the verdict begun beside the lookup, without express or a database. */

function requestWith(authorization?: string): Request {
  return {
    get: (name: string) => (name.toLowerCase() === 'authorization' ? authorization : undefined),
  } as unknown as Request;
}

function response(): Response {
  return { locals: {} } as unknown as Response;
}

/** Runs one middleware; what it passed to next(), or what it threw (rejected). */
async function run(handler: RequestHandler, req: Request, res: Response): Promise<unknown> {
  let passed: unknown = 'next() was not called';
  const next: NextFunction = (error?: unknown) => {
    passed = error;
  };
  try {
    await handler(req, res, next);
  } catch (error) {
    return error;
  }
  return passed;
}

function contextOf(key: string, overrides: Partial<AuthContext> = {}): AuthContext {
  return {
    keyId: 'key_1',
    appId: 'app_1',
    environment: key.includes('_test_') ? 'test' : 'live',
    type: key.startsWith('ls_pk_') ? 'publishable' : 'secret',
    app: { id: 'app_1', name: 'App', subdomainKey: 'app' },
    ...overrides,
  };
}

/** A key store holding the given records, answering when the test says so. */
function keyStore(records: Map<string, AuthContext>) {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let begun: () => void = () => undefined;
  /** Resolves when the first lookup begins (it then waits for release()). */
  const lookupBegun = new Promise<void>((resolve) => {
    begun = resolve;
  });
  const lookups: Buffer[] = [];
  const keys = {
    findActiveByHash: async (hash: Buffer) => {
      lookups.push(hash);
      begun();
      await gate;
      for (const [text, context] of records) {
        if (hashSecretKey(text).equals(hash)) return context;
      }
      return undefined;
    },
  } as unknown as KeysRepository;
  return { keys, lookups, lookupBegun, release };
}

function expectUnauthorised(outcome: unknown, message: string): void {
  expect(outcome).toBeInstanceOf(ApiError);
  const error = outcome as ApiError;
  expect(error.toBody()).toEqual({ error: 'unauthorised', message });
  expect(error.headers).toEqual({ 'WWW-Authenticate': 'Bearer' });
}

describe('readBearerKey', () => {
  it.each([
    ['secret', SECRET_KEYS, generateSecretKey('test'), 'test'],
    ['publishable', PUBLISHABLE_KEYS, generatePublishableKey('live'), 'live'],
  ] as const)(
    'takes a well-formed %s key on its own router',
    async (_t, kind, key, environment) => {
      const res = response();
      expect(await run(readBearerKey(kind), requestWith(`Bearer ${key}`), res)).toBeUndefined();
      expect(res.locals.presentedKey).toEqual({ hash: hashSecretKey(key), environment, kind });
    },
  );

  it.each([
    ['a publishable key', SECRET_KEYS, generatePublishableKey('live')],
    ['a secret key', PUBLISHABLE_KEYS, generateSecretKey('live')],
  ] as const)('refuses %s on the other router, by its text alone', async (_t, kind, key) => {
    const res = response();
    expectUnauthorised(
      await run(readBearerKey(kind), requestWith(`Bearer ${key}`), res),
      kind.message,
    );
    expect(res.locals.presentedKey).toBeUndefined();
  });

  it('reads secret keys when no kind is named', async () => {
    const outcome = await run(
      readBearerKey(),
      requestWith(`Bearer ${generatePublishableKey('live')}`),
      response(),
    );
    expectUnauthorised(outcome, SECRET_KEYS.message);
  });
});

describe('authenticate', () => {
  const publishable = generatePublishableKey('live');

  async function authenticated(record: AuthContext | undefined, key = publishable) {
    const req = requestWith(`Bearer ${key}`);
    const res = response();
    await run(readBearerKey(PUBLISHABLE_KEYS), req, res);
    const store = keyStore(new Map(record ? [[key, record]] : []));
    store.release();
    return { outcome: await run(authenticate(store.keys), req, res), res };
  }

  it('accepts a record of the presented type and environment', async () => {
    const { outcome, res } = await authenticated(contextOf(publishable));
    expect(outcome).toBeUndefined();
    expect(res.locals.auth).toEqual(contextOf(publishable));
  });

  it.each([
    ['no record', undefined],
    ['a secret record', contextOf(publishable, { type: 'secret' })],
    ['a test record', contextOf(publishable, { environment: 'test' })],
  ])('refuses %s with the router kind’s one 401', async (_case, record) => {
    const { outcome, res } = await authenticated(record);
    expectUnauthorised(outcome, PUBLISHABLE_KEYS.message);
    expect(res.locals.auth).toBeUndefined();
  });
});

describe('besideKeyCheck', () => {
  const key = generatePublishableKey('test');

  /** readBearerKey, the verdict's start, then `authentication`, as the SDK router runs them. */
  async function withVerdict(
    decide: (store: ReturnType<typeof keyStore>) => Promise<void>,
    record: AuthContext | undefined,
    authentication: (keys: KeysRepository) => RequestHandler = authenticate,
  ) {
    const req = requestWith(`Bearer ${key}`);
    const res = response();
    const store = keyStore(new Map(record ? [[key, record]] : []));
    const events: string[] = [];
    await run(readBearerKey(PUBLISHABLE_KEYS), req, res);
    await run(
      besideKeyCheck(async () => {
        events.push('verdict begun');
        await decide(store);
        events.push('verdict done');
      }),
      req,
      res,
    );
    const pending = run(authentication(store.keys), req, res);
    // Let everything that can run before the lookup answers run.
    await new Promise((resolve) => setImmediate(resolve));
    events.push(`lookups so far: ${store.lookups.length}`);
    store.release();
    return { outcome: await pending, events, res };
  }

  it('runs beside the lookup: each is under way while the other is pending', async () => {
    // The verdict ends only once the lookup has begun, and the lookup answers only after that:
    // run one after the other, in either order, they would wait for each other for ever.
    const { outcome, events, res } = await withVerdict(
      (store) => store.lookupBegun,
      contextOf(key),
    );
    expect(events).toEqual(['verdict begun', 'verdict done', 'lookups so far: 1']);
    expect(outcome).toBeUndefined();
    expect(res.locals.auth).toEqual(contextOf(key));
  });

  it("answers a good key with the verdict's error", async () => {
    const limited = new ApiError('rate_limited', 'Slow down.', { headers: { 'Retry-After': '9' } });
    const { outcome, res } = await withVerdict(() => Promise.reject(limited), contextOf(key));
    expect(outcome).toBe(limited);
    expect(res.locals.auth).toBeUndefined();
  });

  it('answers a refused key with 401 whatever the verdict', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const limited = new ApiError('rate_limited', 'Slow down.');
      const { outcome } = await withVerdict(() => Promise.reject(limited), undefined);
      expectUnauthorised(outcome, PUBLISHABLE_KEYS.message);
      const broken = new Error('Redis connection is not ready');
      const again = await withVerdict(() => Promise.reject(broken), undefined);
      expectUnauthorised(again.outcome, PUBLISHABLE_KEYS.message);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    // The verdicts nobody heard were settled, not left to reject unhandled.
    expect(unhandled).toEqual([]);
  });

  it('applies to a combined load exactly as to authenticate()', async () => {
    const limited = new ApiError('rate_limited', 'Slow down.');
    const load = (keys: KeysRepository) =>
      combinedLoad(async (hash) => {
        const auth = await keys.findActiveByHash(hash);
        return auth && { auth, loaded: 'read' };
      }).authenticate;
    const good = await withVerdict(
      async (store) => {
        await store.lookupBegun;
        throw limited;
      },
      contextOf(key),
      load,
    );
    expect(good.outcome).toBe(limited);
    expect(good.events).toEqual(['verdict begun', 'lookups so far: 1']);
    const refused = await withVerdict(() => Promise.reject(limited), undefined, load);
    expectUnauthorised(refused.outcome, PUBLISHABLE_KEYS.message);
  });
});
