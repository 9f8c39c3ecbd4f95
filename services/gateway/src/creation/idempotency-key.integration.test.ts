import type { CreationOutcome, IdempotencyKeyId } from '@linkservice/creation';
import { IdempotencyKeysRepository } from '@linkservice/creation';
import type { ApiResponse, Tenant } from '@linkservice/testing';
import {
  batchBody,
  creationRequestCount,
  eventually,
  linkOf,
  linksOf,
  testDatabase,
  timed,
} from '@linkservice/testing';
import { sql } from 'kysely';
import { useCreationStack } from './creation.testing';
import { requestHash } from './idempotency.service';

/** Short, so a stopped worker answers 503 quickly and a waiter gives up (409) quickly. */
const CREATION_TIMEOUT_MS = 1_500;

/** Each key statement's bound (the request budget), short so a blocked key store fails fast. */
const API_REQUEST_BUDGET_MS = 1_000;

/**
 * What the next creation's submit does instead of the plain one; given the real submit. Lets a
 * test end the first request with a 503 exactly when it wants, or throw after the job went out.
 */
let nextSubmit: ((submit: () => Promise<CreationOutcome>) => Promise<CreationOutcome>) | undefined;

const kit = useCreationStack({
  env: {
    CREATION_TIMEOUT_MS: String(CREATION_TIMEOUT_MS),
    API_REQUEST_BUDGET_MS: String(API_REQUEST_BUDGET_MS),
  },
  deps: (clients) => ({
    ...clients,
    creations: {
      submit: (payload, timeoutMs) => {
        const hook = nextSubmit;
        nextSubmit = undefined;
        const submit = () => clients.creations.submit(payload, timeoutMs);
        return hook ? hook(submit) : submit();
      },
      close: () => clients.creations.close(),
    },
  }),
});
let tenant: Tenant;

beforeEach(async () => {
  tenant = await kit.newTenant();
});
afterEach(async () => {
  nextSubmit = undefined;
  // Every test leaves a normally running worker behind.
  await kit.stack.worker.stop();
  await kit.stack.worker.start();
});

type Endpoint = '/api/v1/links' | '/api/v1/links/batch';

function post(
  endpoint: Endpoint,
  body: unknown,
  idempotencyKey: string | undefined,
  secret = tenant.live.secret,
): Promise<ApiResponse> {
  return kit.stack.gateway.api(endpoint, {
    key: secret,
    method: 'POST',
    body,
    headers: idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey },
  });
}

const createWithKey = (body: unknown, key: string | undefined, secret?: string) =>
  post('/api/v1/links', body, key, secret);

const draft = (overrides: Record<string, unknown> = {}) => ({
  webFallbackUrl: 'https://example.com/retry',
  ...overrides,
});

/** The headers a replay repeats from the first answer. */
const REPLAYED_HEADERS = [
  'ratelimit-limit',
  'ratelimit-remaining',
  'ratelimit-reset',
  'retry-after',
] as const;

function expectReplayOf(replay: ApiResponse, first: ApiResponse): void {
  expect(replay.status).toBe(first.status);
  // Byte for byte: the stored answer is the JSON text that was sent.
  expect(replay.text).toBe(first.text);
  for (const name of REPLAYED_HEADERS)
    expect(replay.headers.get(name)).toBe(first.headers.get(name));
  expect(replay.headers.get('idempotent-replayed')).toBe('true');
  expect(first.headers.get('idempotent-replayed')).toBeNull();
  // X-Request-Id stays the replaying request's own.
  expect(replay.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'));
}

function expectKeyFieldError(res: ApiResponse, message: string): void {
  expect(res.status).toBe(422);
  expect(res.body).toEqual({
    error: 'invalid_request',
    message: expect.any(String),
    fields: { 'Idempotency-Key': message },
  });
  expect(res.headers.get('idempotent-replayed')).toBeNull();
  // Like every creation 422: where the caller stands with its creation limit.
  expect(res.headers.get('ratelimit-limit')).toBe('300');
  expect(Number(res.headers.get('ratelimit-remaining'))).toBeGreaterThan(0);
  expect(Number(res.headers.get('ratelimit-reset'))).toBeGreaterThan(0);
}

/** Makes the key's record look as a gateway that died before storing its answer leaves it. */
async function ownerDied(key: string): Promise<void> {
  await sql`
    UPDATE idempotency_keys
    SET answer_status = NULL, answer_headers = NULL, answer_body = NULL,
        owner_deadline = now() - interval '1 second'
    WHERE app_id = ${tenant.appId} AND key = ${key}`.execute(kit.db);
}

async function doneCreationRequests(): Promise<number> {
  const rows = await kit.db
    .selectFrom('creation_requests')
    .select('id')
    .where('app_id', '=', tenant.appId)
    .where('status', '=', 'done')
    .execute();
  return rows.length;
}

/** Resolves once a request holds the key (its claim committed). */
function keyHeld(key: string) {
  return eventually(
    () =>
      kit.db
        .selectFrom('idempotency_keys')
        .select('key')
        .where('app_id', '=', tenant.appId)
        .where('key', '=', key)
        .executeTakeFirst(),
    { intervalMs: 5, what: `the first request holding the key ${key}` },
  );
}

const INVALID_KEY = 'must be 1-255 printable ASCII characters';
const REUSED_KEY = 'was already used with a different request (in the last 24 hours)';

async function remainingUnits(): Promise<number> {
  const state = await kit.stack.gateway.deps.creationLimiter.state(tenant.appId);
  return state.remaining;
}

describe('Idempotency-Key on POST /links', () => {
  it('replays a 201 with the same body and RateLimit headers, using no limit unit', async () => {
    const first = await createWithKey(draft(), 'order-1');
    expect(first.status).toBe(201);
    const unitsAfterFirst = await remainingUnits();

    // Key order of the body does not make another request.
    const replay = await createWithKey({ webFallbackUrl: 'https://example.com/retry' }, 'order-1');
    expectReplayOf(replay, first);
    expect(await remainingUnits()).toBe(unitsAfterFirst);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
    expect(await creationRequestCount(kit.db, tenant.appId)).toBe(1);
  });

  it('without the header, every request creates (the spec: no idempotency keys)', async () => {
    const one = await createWithKey(draft(), undefined);
    const two = await createWithKey(draft(), undefined);
    expect([one.status, two.status]).toEqual([201, 201]);
    expect(linkOf(one).id).not.toBe(linkOf(two).id);
    expect(one.headers.get('idempotent-replayed')).toBeNull();
    const stored = await kit.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('app_id', '=', tenant.appId)
      .execute();
    expect(stored).toEqual([]);
  });

  it('refuses the same key with a different body, or on the other endpoint (422)', async () => {
    expect((await createWithKey(draft(), 'k')).status).toBe(201);
    expectKeyFieldError(await createWithKey(draft({ title: 'other' }), 'k'), REUSED_KEY);
    expectKeyFieldError(await post('/api/v1/links/batch', { links: [draft()] }, 'k'), REUSED_KEY);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it.each([
    ['empty', ''],
    ['256 characters', 'k'.repeat(256)],
    ['not ASCII', 'clé'],
    ['with a control character (tab)', 'a\tb'],
  ])('refuses a key that is %s (422), creating nothing', async (_case, value) => {
    expectKeyFieldError(await createWithKey(draft(), value), INVALID_KEY);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(0);
  });

  it('takes 255 printable ASCII characters, spaces and symbols included', async () => {
    const key = ` !~${'x'.repeat(249)}{}~`;
    expect(key).toHaveLength(255);
    const first = await createWithKey(draft(), key);
    expect(first.status).toBe(201);
    expectReplayOf(await createWithKey(draft(), key), first);
  });

  it('answers a body that is not JSON with 400 invalid_body, as without a key', async () => {
    const res = await kit.stack.gateway.api('/api/v1/links', {
      key: tenant.live.secret,
      method: 'POST',
      rawBody: '{"webFallbackUrl":',
      headers: { 'content-type': 'application/json', 'Idempotency-Key': 'broken' },
    });
    expect(res.status).toBe(400);
    expect(res.body?.error).toBe('invalid_body');
    // Not stored: the key is free for a well-formed request.
    expect((await createWithKey(draft(), 'broken')).status).toBe(201);
  });

  it('scopes keys by app and by environment', async () => {
    const other = await kit.newTenant();
    const live = await createWithKey(draft(), 'shared');
    // Other bodies: under one scope they would be refused as a reused key.
    const test = await createWithKey(draft({ title: 'test env' }), 'shared', tenant.test.secret);
    const otherApp = await createWithKey(
      draft({ title: 'other app' }),
      'shared',
      other.live.secret,
    );
    for (const res of [live, test, otherApp]) {
      expect(res.status).toBe(201);
      expect(res.headers.get('idempotent-replayed')).toBeNull();
    }
    expect(new Set([live, test, otherApp].map((res) => linkOf(res).id)).size).toBe(3);
    expect(linkOf(test).environment).toBe('test');
  });

  it('stores a 422 (alias taken) and replays it', async () => {
    expect((await createWithKey(draft({ alias: 'taken' }), undefined)).status).toBe(201);
    const first = await createWithKey(draft({ alias: 'taken' }), 'alias-key');
    expect(first.status).toBe(422);
    expect(first.body?.fields).toEqual({ alias: expect.any(String) });
    expectReplayOf(await createWithKey(draft({ alias: 'taken' }), 'alias-key'), first);
  });

  it('does not store a 503: once the worker is back, the same key creates', async () => {
    await kit.stack.worker.stop();
    const down = await createWithKey(draft({ alias: 'later' }), 'down');
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('5');

    await kit.stack.worker.start();
    const retried = await createWithKey(draft({ alias: 'later' }), 'down');
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(linkOf(retried).alias).toBe('later');
  });

  it('does not store a 429: once units are back, the same key creates', async () => {
    const { creationLimiter } = kit.stack.gateway.deps;
    const all = await creationLimiter.state(tenant.appId);
    await creationLimiter.reserve(tenant.appId, all.remaining);
    const limited = await createWithKey(draft(), 'limited');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

    await creationLimiter.release(tenant.appId, all.remaining);
    const retried = await createWithKey(draft(), 'limited');
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it('10 parallel identical requests: one link, identical answers', async () => {
    // A slow worker, so the nine others really wait for the first.
    await kit.stack.worker.stop();
    await kit.stack.worker.start({ testDelayMs: 300 });
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => createWithKey(draft(), 'parallel')),
    );
    expect(answers.map((res) => res.status)).toEqual(Array<number>(10).fill(201));
    expect(new Set(answers.map((res) => res.text)).size).toBe(1);
    expect(new Set(answers.map((res) => res.headers.get('ratelimit-remaining'))).size).toBe(1);
    const replayed = answers.filter((res) => res.headers.get('idempotent-replayed') === 'true');
    expect(replayed).toHaveLength(9);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
    expect(await creationRequestCount(kit.db, tenant.appId)).toBe(1);
  });

  it('a retry after the client gave up (forced timeout) gets the original link, once', async () => {
    await kit.stack.worker.stop();
    await kit.stack.worker.start({ testDelayMs: 800 });
    const url = `${kit.stack.gateway.baseUrl}/api/v1/links`;
    const headers = {
      authorization: `Bearer ${tenant.live.secret}`,
      'content-type': 'application/json',
      'Idempotency-Key': 'gave-up',
    };
    // The client's own timeout ends its request while the worker is still creating.
    await expect(
      fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(draft()),
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow();

    const retry = await createWithKey(draft(), 'gave-up');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    const again = await createWithKey(draft(), 'gave-up');
    expect(again.text).toBe(retry.text);
    const links = await linksOf(kit.db, tenant.appId);
    expect(links.map((link) => link.id)).toEqual([linkOf(retry).id]);
  });

  it('10 parallel retries after a forced timeout: the original link, once, the same answer', async () => {
    await kit.stack.worker.stop();
    await kit.stack.worker.start({ testDelayMs: 800 });
    await expect(
      fetch(`${kit.stack.gateway.baseUrl}/api/v1/links`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tenant.live.secret}`,
          'content-type': 'application/json',
          'Idempotency-Key': 'storm',
        },
        body: JSON.stringify(draft()),
        signal: AbortSignal.timeout(200),
      }),
    ).rejects.toThrow();
    // The client retries at once, ten times over, while the worker still creates.
    const retries = await Promise.all(
      Array.from({ length: 10 }, () => createWithKey(draft(), 'storm')),
    );
    expect(retries.map((res) => res.status)).toEqual(Array<number>(10).fill(201));
    expect(new Set(retries.map((res) => res.text)).size).toBe(1);
    for (const res of retries) expect(res.headers.get('idempotent-replayed')).toBe('true');
    const links = await linksOf(kit.db, tenant.appId);
    expect(links.map((link) => link.id)).toEqual([linkOf(retries[0]).id]);
    expect(await creationRequestCount(kit.db, tenant.appId)).toBe(1);
  });

  it('answers 409 with Retry-After when the first has not finished within the timeout', async () => {
    // The worker commits past the creation timeout but inside the commit grace (1 s): the first
    // request settles to 201 after the waiter, which arrived just after it, has given up.
    await kit.stack.worker.stop();
    await kit.stack.worker.start({ testDelayMs: CREATION_TIMEOUT_MS + 300 });
    const first = createWithKey(draft(), 'slow');
    // The waiter comes once the first holds the key.
    await eventually(
      () =>
        kit.db
          .selectFrom('idempotency_keys')
          .select('key')
          .where('app_id', '=', tenant.appId)
          .where('key', '=', 'slow')
          .executeTakeFirst(),
      { intervalMs: 5, what: 'the first request holding the key' },
    );
    const { res: waiting, elapsedMs } = await timed(() => createWithKey(draft(), 'slow'));
    expect(waiting.status).toBe(409);
    expect(waiting.body).toEqual({
      error: 'conflict',
      message: 'A request with this Idempotency-Key is still in progress; retry later.',
    });
    expect(waiting.headers.get('retry-after')).toBe('1');
    expect(elapsedMs).toBeGreaterThanOrEqual(CREATION_TIMEOUT_MS - 100);
    expect(elapsedMs).toBeLessThan(CREATION_TIMEOUT_MS + 1_000);

    const answered = await first;
    expect(answered.status).toBe(201);
    expectReplayOf(await createWithKey(draft(), 'slow'), answered);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it('a gateway that died after the worker committed: the retry replays the link from its results', async () => {
    const first = await createWithKey(draft({ alias: 'orphan' }), 'died');
    expect(first.status).toBe(201);
    // As a gateway that died before storing its answer leaves the record: running, its
    // deadline passed; creation_requests holds the worker's committed 'done' results.
    await sql`
      UPDATE idempotency_keys
      SET answer_status = NULL, answer_headers = NULL, answer_body = NULL,
          owner_deadline = now() - interval '1 second'
      WHERE app_id = ${tenant.appId} AND key = 'died'`.execute(kit.db);

    const retry = await createWithKey(draft({ alias: 'orphan' }), 'died');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(linkOf(retry)).toEqual(linkOf(first));
    expect(retry.headers.get('ratelimit-limit')).toBe('300');
    // Rebuilt once, stored, then replayed as stored.
    const again = await createWithKey(draft({ alias: 'orphan' }), 'died');
    expect(again.text).toBe(retry.text);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it('a gateway that died before the worker created: the retry takes the key over and creates', async () => {
    // A record whose owner never got its job to a worker: no creation_requests row at all.
    await sql`
      INSERT INTO idempotency_keys
        (app_id, environment, key, request_hash, creation_request_id, owner_deadline)
      VALUES (${tenant.appId}, 'live', 'lost', ${requestHash('POST /links', draft())},
              'crt_lost-attempt', now() - interval '1 second')`.execute(kit.db);
    const retry = await createWithKey(draft(), 'lost');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    // The lost attempt is settled as abandoned: a late job of it could create nothing.
    const settled = await kit.db
      .selectFrom('creation_requests')
      .select('status')
      .where('id', '=', 'crt_lost-attempt')
      .executeTakeFirst();
    expect(settled?.status).toBe('abandoned');
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it('answers 503 with Retry-After within the budget when the key store does not answer', async () => {
    const first = await createWithKey(draft(), 'blocked');
    expect(first.status).toBe(201);
    // Another session holds the key's row: the claim waits on it, as over a stuck Postgres.
    const holder = testDatabase(1);
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding = (): void => undefined;
    const held = new Promise<void>((resolve) => {
      holding = resolve;
    });
    const transaction = holder.db.transaction().execute(async (trx) => {
      await sql`SELECT 1 FROM idempotency_keys
                WHERE app_id = ${tenant.appId} AND key = 'blocked' FOR UPDATE`.execute(trx);
      holding();
      await released;
    });
    try {
      await held;
      const { res, elapsedMs } = await timed(() => createWithKey(draft(), 'blocked'));
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ error: 'unavailable', message: expect.any(String) });
      expect(res.headers.get('retry-after')).toBe('5');
      expect(elapsedMs).toBeLessThan(API_REQUEST_BUDGET_MS + 1_000);
    } finally {
      release();
      await transaction;
      await holder.close();
    }
    // The key store answers again: the stored answer is replayed.
    expectReplayOf(await createWithKey(draft(), 'blocked'), first);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it('forgets a key after 24 hours: the same key then creates anew', async () => {
    expect((await createWithKey(draft(), 'old')).status).toBe(201);
    await sql`
      UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second'
      WHERE app_id = ${tenant.appId} AND key = 'old'`.execute(kit.db);
    // Another body would be refused within the 24 hours; now it is a new request.
    const anew = await createWithKey(draft({ title: 'new' }), 'old');
    expect(anew.status).toBe(201);
    expect(anew.headers.get('idempotent-replayed')).toBeNull();
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(2);
  });

  it("the worker's retention deletes keys older than 24 hours only", async () => {
    expect((await createWithKey(draft(), 'expired')).status).toBe(201);
    expect((await createWithKey(draft(), 'fresh')).status).toBe(201);
    await sql`
      UPDATE idempotency_keys SET created_at = now() - interval '25 hours'
      WHERE app_id = ${tenant.appId} AND key = 'expired'`.execute(kit.db);
    const repository = new IdempotencyKeysRepository(kit.db);
    while ((await repository.deleteOlderThan(24, 1_000)) > 0);
    const left = await kit.db
      .selectFrom('idempotency_keys')
      .select('key')
      .where('app_id', '=', tenant.appId)
      .execute();
    expect(left).toEqual([{ key: 'fresh' }]);
  });

  it('waiters poll while the first runs; it ends in 503 and one waiter takes the key over', async () => {
    let failFirst = (): void => undefined;
    const firstMayFail = new Promise<void>((resolve) => {
      failFirst = resolve;
    });
    // The first request's creation ends in a 503 (nothing created) when the test says so.
    nextSubmit = async () => {
      await firstMayFail;
      return { kind: 'unavailable', reason: 'queue_unreachable' };
    };
    const claims = jest.spyOn(IdempotencyKeysRepository.prototype, 'claim');
    const reads = jest.spyOn(IdempotencyKeysRepository.prototype, 'read');
    let waiters: Promise<ApiResponse>[] = [];
    try {
      const first = createWithKey(draft(), 'take-over');
      await keyHeld('take-over');
      waiters = Array.from({ length: 5 }, () => createWithKey(draft(), 'take-over'));
      // Every waiter has claimed once (its first statement) and polls a few times, then the
      // first is dropped.
      await eventually(() => claims.mock.calls.length === 6 || undefined, {
        intervalMs: 5,
        what: 'every waiter reading the key',
      });
      const readsSoFar = reads.mock.calls.length;
      await eventually(() => reads.mock.calls.length >= readsSoFar + 15 || undefined, {
        intervalMs: 5,
        what: 'the waiters polling the key',
      });
      // Polls are plain reads: no claim (an upsert that locks the row) while the first runs.
      expect(claims).toHaveBeenCalledTimes(6);
      failFirst();
      expect((await first).status).toBe(503);
    } finally {
      failFirst();
      claims.mockRestore();
      reads.mockRestore();
    }

    const answers = await Promise.all(waiters);
    expect(answers.map((res) => res.status)).toEqual(Array<number>(5).fill(201));
    expect(new Set(answers.map((res) => res.text)).size).toBe(1);
    // One waiter ran the creation itself; the others replay its answer.
    const replayed = answers.filter((res) => res.headers.get('idempotent-replayed') === 'true');
    expect(replayed).toHaveLength(4);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
    expect(await doneCreationRequests()).toBe(1);
  });

  it('keeps the key when the creation throws after its job was submitted: the retry replays the link', async () => {
    // A bug after the job went out (as a result that fails to parse): the link exists.
    nextSubmit = async (submit) => {
      const outcome = await submit();
      expect(outcome.kind).toBe('completed');
      throw new Error('a result the gateway could not read');
    };
    const failed = await createWithKey(draft({ alias: 'after-submit' }), 'thrown');
    expect(failed.status).toBe(500);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);

    // The record stays with that attempt; once its deadline passed, a retry settles it.
    await sql`
      UPDATE idempotency_keys SET owner_deadline = now() - interval '1 second'
      WHERE app_id = ${tenant.appId} AND key = 'thrown'`.execute(kit.db);
    const retry = await createWithKey(draft({ alias: 'after-submit' }), 'thrown');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(linkOf(retry).alias).toBe('after-submit');
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it('keeps the key after a 503 whose outcome Postgres could not tell: the retry replays the link', async () => {
    // The worker committed, then the settle could not read Postgres: links may exist.
    nextSubmit = async (submit) => {
      expect((await submit()).kind).toBe('completed');
      return { kind: 'unavailable', reason: 'database_unreachable' };
    };
    const unknown = await createWithKey(draft({ alias: 'unknown-outcome' }), 'unknown');
    expect(unknown.status).toBe(503);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);

    // Not freed (a retry would create a second link): still the first attempt's, unanswered.
    const record = await new IdempotencyKeysRepository(kit.db).read({
      appId: tenant.appId,
      environment: 'live',
      key: 'unknown',
    });
    expect(record).toMatchObject({ answer: null, ownerGone: false });

    await ownerDied('unknown');
    const retry = await createWithKey(draft({ alias: 'unknown-outcome' }), 'unknown');
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(linkOf(retry).alias).toBe('unknown-outcome');
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it('frees the key when the creation throws before its job was submitted', async () => {
    const { creationLimiter } = kit.stack.gateway.deps;
    const spy = jest
      .spyOn(creationLimiter, 'reserve')
      .mockRejectedValueOnce(new Error('Redis away'));
    try {
      const failed = await createWithKey(draft(), 'before-submit');
      expect(failed.status).toBeGreaterThanOrEqual(500);
    } finally {
      spy.mockRestore();
    }
    const retried = await createWithKey(draft(), 'before-submit');
    expect(retried.status).toBe(201);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
  });

  it('two requests settling the same gone owner at once: both replay its link, created once', async () => {
    const first = await createWithKey(draft({ alias: 'settled-twice' }), 'twice');
    expect(first.status).toBe(201);
    await ownerDied('twice');
    const [one, two] = await Promise.all([
      createWithKey(draft({ alias: 'settled-twice' }), 'twice'),
      createWithKey(draft({ alias: 'settled-twice' }), 'twice'),
    ]);
    for (const res of [one, two]) {
      expect(res.status).toBe(201);
      expect(res.headers.get('idempotent-replayed')).toBe('true');
      expect(linkOf(res)).toEqual(linkOf(first));
    }
    expect(one.text).toBe(two.text);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it('two requests settling the same gone owner that created nothing: one creates, once', async () => {
    await sql`
      INSERT INTO idempotency_keys
        (app_id, environment, key, request_hash, creation_request_id, owner_deadline)
      VALUES (${tenant.appId}, 'live', 'lost-twice', ${requestHash('POST /links', draft())},
              'crt_lost-twice', now() - interval '1 second')`.execute(kit.db);
    const answers = await Promise.all([
      createWithKey(draft(), 'lost-twice'),
      createWithKey(draft(), 'lost-twice'),
    ]);
    expect(answers.map((res) => res.status)).toEqual([201, 201]);
    expect(answers[0].text).toBe(answers[1].text);
    expect(answers.filter((res) => res.headers.get('idempotent-replayed') === 'true')).toHaveLength(
      1,
    );
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
    expect(await doneCreationRequests()).toBe(1);
  });

  it('a claim that waited on the takeover of an expired key never reports the expired row', async () => {
    expect((await createWithKey(draft(), 'expiring')).status).toBe(201);
    await sql`
      UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 second'
      WHERE app_id = ${tenant.appId} AND key = 'expiring'`.execute(kit.db);
    const id: IdempotencyKeyId = { appId: tenant.appId, environment: 'live', key: 'expiring' };
    const newHash = requestHash('POST /links', draft({ title: 'new' }));
    const attempt = (creationRequestId: string) => ({
      requestHash: newHash,
      creationRequestId,
      leaseMs: 60_000,
    });
    // Two sessions, as two gateways: the first takes the expired key over and has not committed
    // when the second's claim starts (its snapshot still sees the expired row) and waits.
    const taker = testDatabase(1);
    const waiter = testDatabase(1);
    let commit = (): void => undefined;
    const mayCommit = new Promise<void>((resolve) => {
      commit = resolve;
    });
    let tookOver = (): void => undefined;
    const claimed = new Promise<void>((resolve) => {
      tookOver = resolve;
    });
    try {
      const { rows } = await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(
        waiter.db,
      );
      const waiterPid = rows[0]?.pid;
      const takeover = taker.db.transaction().execute(async (trx) => {
        const claim = await new IdempotencyKeysRepository(trx).claim(id, attempt('crt_taker'));
        expect(claim?.kind).toBe('claimed');
        tookOver();
        await mayCommit;
      });
      await claimed;
      const waiting = new IdempotencyKeysRepository(waiter.db).claim(id, attempt('crt_waiter'));
      await eventually(
        async () => {
          const blocked = await sql`
            SELECT 1 FROM pg_stat_activity
            WHERE pid = ${waiterPid} AND wait_event_type = 'Lock'`.execute(kit.db);
          return blocked.rows.length > 0 || undefined;
        },
        { intervalMs: 5, what: "the second claim waiting on the takeover's row lock" },
      );
      commit();
      await takeover;
      // Not the expired row (its hash, its answer): the caller reads again.
      expect(await waiting).toBeUndefined();
      expect(await new IdempotencyKeysRepository(waiter.db).read(id)).toMatchObject({
        requestHash: newHash,
        creationRequestId: 'crt_taker',
        answer: null,
      });
    } finally {
      commit();
      await Promise.all([taker.close(), waiter.close()]);
    }
  });
});

describe('Idempotency-Key on POST /links/batch', () => {
  it('replays a 201', async () => {
    const links = [draft({ alias: 'b-1' }), draft({ alias: 'b-2' })];
    const first = await post('/api/v1/links/batch', { links }, 'batch-201');
    expect(first.status).toBe(201);
    expect(batchBody(first).created).toBe(2);
    const units = await remainingUnits();
    expectReplayOf(await post('/api/v1/links/batch', { links }, 'batch-201'), first);
    expect(await remainingUnits()).toBe(units);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(2);
  });

  it('replays a 207', async () => {
    const links = [draft({ alias: 'ok-1' }), { webFallbackUrl: 'not a url' }];
    const first = await post('/api/v1/links/batch', { links }, 'batch-207');
    expect(first.status).toBe(207);
    expectReplayOf(await post('/api/v1/links/batch', { links }, 'batch-207'), first);
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(1);
  });

  it('a gateway that died mid-batch: the retry rebuilds the report from the results', async () => {
    const links = [draft({ alias: 'd-1' }), { webFallbackUrl: 'not a url' }, draft()];
    const first = await post('/api/v1/links/batch', { links }, 'batch-died');
    expect(first.status).toBe(207);
    await sql`
      UPDATE idempotency_keys
      SET answer_status = NULL, answer_headers = NULL, answer_body = NULL,
          owner_deadline = now() - interval '1 second'
      WHERE app_id = ${tenant.appId} AND key = 'batch-died'`.execute(kit.db);
    const retry = await post('/api/v1/links/batch', { links }, 'batch-died');
    expect(retry.status).toBe(207);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(await linksOf(kit.db, tenant.appId)).toHaveLength(2);
  });

  it("a rebuilt report judges the entries the worker never reached by the first request's clock", async () => {
    // One unit left: the worker creates the first entry, refuses the second (rate_limited) and
    // stops; the third, valid when the first request checked it, is not attempted.
    const { creationLimiter } = kit.stack.gateway.deps;
    const all = await creationLimiter.state(tenant.appId);
    await creationLimiter.reserve(tenant.appId, all.remaining - 1);
    const expiresAt = new Date(Date.now() + 2_000);
    const links = [draft(), draft(), draft({ expiresAt: expiresAt.toISOString() })];
    const first = await post('/api/v1/links/batch', { links }, 'batch-clock');
    expect(first.status).toBe(207);
    expect(batchBody(first).notAttempted).toBe(1);

    await ownerDied('batch-clock');
    // Rebuilt after the third entry's expiresAt has passed.
    await eventually(() => Date.now() > expiresAt.getTime() + 100 || undefined, {
      what: "the third entry's expiresAt passing",
    });
    const retry = await post('/api/v1/links/batch', { links }, 'batch-clock');
    expect(retry.status).toBe(207);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body).toEqual(first.body);
  });
});
