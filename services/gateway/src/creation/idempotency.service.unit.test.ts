import type { KeyClaim, KeyRecord, SettleResult, StoredAnswer } from '@linkservice/creation';
import { createLogger } from '@linkservice/logger';
import type {
  Clock,
  IdempotencyDeps,
  IdempotentCreation,
  IdempotentRequest,
  OwnedAttempt,
} from './idempotency.service';
import { canonicalJson, IdempotencyService, requestHash } from './idempotency.service';

describe('canonicalJson', () => {
  it('sorts object keys at every depth and keeps array order', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { y: 1, x: 0 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"x":0,"y":1}]},"b":1}',
    );
  });

  it('keeps a member named __proto__ (JSON.parse makes it an own property)', () => {
    const body = JSON.parse('{"__proto__":{"x":1},"a":2}') as Record<string, unknown>;
    expect(canonicalJson(body)).toBe('{"__proto__":{"x":1},"a":2}');
  });
});

describe('requestHash', () => {
  it('is the same for the same body in another key order, and differs by endpoint', () => {
    const one = requestHash('POST /links', { a: 1, b: 2 });
    expect(requestHash('POST /links', { b: 2, a: 1 })).toBe(one);
    expect(requestHash('POST /links/batch', { a: 1, b: 2 })).not.toBe(one);
    expect(requestHash('POST /links', { a: 1, b: 3 })).not.toBe(one);
  });
});

const request: IdempotentRequest = {
  appId: 'app_1',
  environment: 'live',
  key: 'k',
  endpoint: 'POST /links',
  body: { webFallbackUrl: 'https://example.com' },
};

const created: StoredAnswer = { status: 201, headers: {}, body: '{"link":{}}' };
const unavailable: StoredAnswer = { status: 503, headers: { 'Retry-After': '5' }, body: '{}' };

const claimedAt = new Date('2026-11-25T06:00:00Z');
const claimed: KeyClaim = { kind: 'claimed', claimedAt };

/** A clock that moves only when the service sleeps: waits take no time and never run late. */
function virtualClock(): Clock {
  let now = 0;
  return {
    now: () => now,
    sleep: (ms) => {
      now += ms;
      return Promise.resolve();
    },
  };
}

/**
 * A key store in memory: answers the claims and reads in turn from `states` (a claimed state
 * answers only a claim), and records what the service asked of it, statement by statement.
 */
function fakeDeps(states: (KeyClaim | undefined)[], overrides: Partial<IdempotencyDeps> = {}) {
  const calls = {
    stored: [] as StoredAnswer[],
    released: [] as string[],
    settled: [] as string[],
    statements: [] as ('claim' | 'read')[],
  };
  const deps: IdempotencyDeps = {
    keys: {
      claim: () => {
        calls.statements.push('claim');
        return Promise.resolve(states.shift());
      },
      read: (): Promise<KeyRecord | undefined> => {
        calls.statements.push('read');
        const state = states.shift();
        if (state?.kind === 'claimed') throw new Error('a read cannot claim');
        return Promise.resolve(state);
      },
      storeAnswer: (_id, _creationRequestId, answer) => {
        calls.stored.push(answer);
        return Promise.resolve(true);
      },
      release: (_id, creationRequestId) => {
        calls.released.push(creationRequestId);
        return Promise.resolve();
      },
    },
    requests: {
      abandonOrRead: (creationRequestId): Promise<SettleResult> => {
        calls.settled.push(creationRequestId);
        return Promise.resolve({ kind: 'abandoned' });
      },
    },
    creationTimeoutMs: 200,
    queryTimeoutMs: 100,
    logger: createLogger('idempotency-test', 'silent'),
    pollIntervalMs: 5,
    clock: virtualClock(),
    ...overrides,
  };
  return { deps, calls };
}

function creationAnswering(
  answer: StoredAnswer,
  outcomeUnknown = false,
): IdempotentCreation & { runs: string[] } {
  const runs: string[] = [];
  return {
    runs,
    run: ({ creationRequestId }) => {
      runs.push(creationRequestId);
      return Promise.resolve({ answer, outcomeUnknown });
    },
    rebuild: () => Promise.reject(new Error('not expected')),
  };
}

type Taken = Extract<KeyClaim, { kind: 'taken' }>;

const running = (overrides: Partial<Taken> = {}): Taken => ({
  kind: 'taken',
  requestHash: requestHash(request.endpoint, request.body),
  creationRequestId: 'crt_owner',
  ownerGone: false,
  answer: null,
  claimedAt,
  ...overrides,
});

describe('IdempotencyService', () => {
  it('stores the answer of the attempt that claimed the key', async () => {
    const { deps, calls } = fakeDeps([claimed]);
    const creation = creationAnswering(created);
    const outcome = await new IdempotencyService(deps).answer(request, creation);
    expect(outcome).toEqual({ kind: 'answered', answer: created, replayed: false });
    expect(calls.stored).toEqual([created]);
    expect(creation.runs).toHaveLength(1);
  });

  it('frees the key after a 503, unless Postgres could not settle the creation', async () => {
    const known = fakeDeps([claimed]);
    await new IdempotencyService(known.deps).answer(request, creationAnswering(unavailable));
    expect(known.calls.released).toHaveLength(1);
    expect(known.calls.stored).toEqual([]);

    // Links may exist: the record stays until its deadline, then a retry settles it.
    const unknown = fakeDeps([claimed]);
    await new IdempotencyService(unknown.deps).answer(
      request,
      creationAnswering(unavailable, true),
    );
    expect(unknown.calls.released).toEqual([]);
    expect(unknown.calls.stored).toEqual([]);
  });

  it('answers as created when storing the answer fails', async () => {
    const { deps } = fakeDeps([claimed]);
    deps.keys.storeAnswer = () => Promise.reject(new Error('Connection terminated'));
    const outcome = await new IdempotencyService(deps).answer(request, creationAnswering(created));
    expect(outcome).toEqual({ kind: 'answered', answer: created, replayed: false });
  });

  it('lets a failing key store fail the request (the routes answer 503)', async () => {
    const { deps } = fakeDeps([]);
    deps.keys.claim = () => Promise.reject(new Error('Connection terminated'));
    await expect(
      new IdempotencyService(deps).answer(request, creationAnswering(created)),
    ).rejects.toThrow('Connection terminated');
  });

  it('waits for the running first request, polling with plain reads, and replays its answer', async () => {
    const { deps, calls } = fakeDeps([running(), running(), running({ answer: created })]);
    const creation = creationAnswering(created);
    const outcome = await new IdempotencyService(deps).answer(request, creation);
    expect(outcome).toEqual({ kind: 'answered', answer: created, replayed: true });
    expect(creation.runs).toEqual([]);
    // Only the first statement is the claim (an upsert that locks the row).
    expect(calls.statements).toEqual(['claim', 'read', 'read']);
  });

  it('takes the key over when the first ended in a 503 (its record gone)', async () => {
    const { deps, calls } = fakeDeps([running(), running(), undefined, claimed]);
    const creation = creationAnswering(created);
    const outcome = await new IdempotencyService(deps).answer(request, creation);
    expect(outcome).toEqual({ kind: 'answered', answer: created, replayed: false });
    expect(creation.runs).toHaveLength(1);
    expect(calls.statements).toEqual(['claim', 'read', 'read', 'claim']);
  });

  it('reads again when the claim met a row its snapshot could not see', async () => {
    const { deps, calls } = fakeDeps([undefined, running({ answer: created })]);
    const outcome = await new IdempotencyService(deps).answer(request, creationAnswering(created));
    expect(outcome).toEqual({ kind: 'answered', answer: created, replayed: true });
    expect(calls.statements).toEqual(['claim', 'read']);
  });

  it('runs the owner under the claimed creation request id and the claim time', async () => {
    const { deps } = fakeDeps([claimed]);
    let attempt: OwnedAttempt | undefined;
    await new IdempotencyService(deps).answer(request, {
      run: (owned) => {
        attempt = owned;
        return Promise.resolve({ answer: created });
      },
      rebuild: () => Promise.reject(new Error('not expected')),
    });
    expect(attempt?.creationRequestId).toMatch(/^crt_/);
    expect(attempt?.checkedAt).toBe(claimedAt);
  });

  it('frees the key when the creation throws before its job was submitted', async () => {
    const { deps, calls } = fakeDeps([claimed]);
    const creation = creationAnswering(created);
    creation.run = () => Promise.reject(new Error('Redis away'));
    await expect(new IdempotencyService(deps).answer(request, creation)).rejects.toThrow(
      'Redis away',
    );
    expect(calls.released).toHaveLength(1);
  });

  it('keeps the key when the creation throws after its job was submitted (links may exist)', async () => {
    const { deps, calls } = fakeDeps([claimed]);
    const creation = creationAnswering(created);
    creation.run = ({ onJob }) => {
      onJob();
      return Promise.reject(new Error('creation job answered without a result for entry 0'));
    };
    await expect(new IdempotencyService(deps).answer(request, creation)).rejects.toThrow('entry 0');
    // The record stays until its deadline; a retry then settles the creation request.
    expect(calls.released).toEqual([]);
    expect(calls.stored).toEqual([]);
  });

  it('gives up with in_progress after the creation timeout', async () => {
    const { deps } = fakeDeps([running()]);
    deps.keys.read = () => Promise.resolve(running());
    const outcome = await new IdempotencyService(deps).answer(request, creationAnswering(created));
    expect(outcome).toEqual({ kind: 'in_progress' });
    // It polled until one more poll would pass the timeout (200 ms, polls every 5 ms).
    expect(deps.clock?.now()).toBe(195);
  });

  it('refuses another request under the key', async () => {
    const { deps } = fakeDeps([running({ requestHash: 'other' })]);
    const outcome = await new IdempotencyService(deps).answer(request, creationAnswering(created));
    expect(outcome).toEqual({ kind: 'key_reused' });
  });

  it("settles a gone owner's creation request: abandoned frees the key for this request", async () => {
    const { deps, calls } = fakeDeps([running({ ownerGone: true }), claimed]);
    // (claim finds the gone owner; after the settle, the key is claimed anew)
    const creation = creationAnswering(created);
    const outcome = await new IdempotencyService(deps).answer(request, creation);
    expect(calls.settled).toEqual(['crt_owner']);
    expect(calls.released).toEqual(['crt_owner']);
    expect(outcome).toEqual({ kind: 'answered', answer: created, replayed: false });
  });

  it("settles a gone owner's creation request: done is rebuilt, stored and replayed", async () => {
    const { deps, calls } = fakeDeps([running({ ownerGone: true })], {});
    deps.requests.abandonOrRead = () => Promise.resolve({ kind: 'done', results: { results: [] } });
    const rebuilt: StoredAnswer = { status: 201, headers: {}, body: '{"rebuilt":true}' };
    const creation = creationAnswering(created);
    const checkedWith: Date[] = [];
    creation.rebuild = (_results, checkedAt) => {
      checkedWith.push(checkedAt);
      return Promise.resolve(rebuilt);
    };
    const outcome = await new IdempotencyService(deps).answer(request, creation);
    expect(outcome).toEqual({ kind: 'answered', answer: rebuilt, replayed: true });
    expect(calls.stored).toEqual([rebuilt]);
    expect(creation.runs).toEqual([]);
    // The owner's clock, not this request's.
    expect(checkedWith).toEqual([claimedAt]);
  });

  it('does not store a rebuilt answer that created nothing (429): the key is freed', async () => {
    const { deps, calls } = fakeDeps([running({ ownerGone: true })]);
    deps.requests.abandonOrRead = () => Promise.resolve({ kind: 'done', results: { results: [] } });
    const limited: StoredAnswer = { status: 429, headers: { 'Retry-After': '60' }, body: '{}' };
    const creation = creationAnswering(created);
    creation.rebuild = () => Promise.resolve(limited);
    const outcome = await new IdempotencyService(deps).answer(request, creation);
    expect(outcome).toEqual({ kind: 'answered', answer: limited, replayed: true });
    expect(calls.stored).toEqual([]);
    expect(calls.released).toEqual(['crt_owner']);
  });
});
