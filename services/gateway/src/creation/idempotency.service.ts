import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  CreateLinksResult,
  CreationRequestsRepository,
  IdempotencyKeyId,
  IdempotencyKeysRepository,
  KeyRecord,
  StoredAnswer,
} from '@linkservice/creation';
import { createLinksResultSchema, SETTLE_DEADLINE_MS } from '@linkservice/creation';
import { withQueryDeadline } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';
import { newCreationRequestId } from './link-submission.service';

/** The two requests an Idempotency-Key may be sent with; part of what "the same request" is. */
export type IdempotentEndpoint = 'POST /links' | 'POST /links/batch';

export interface IdempotentRequest extends IdempotencyKeyId {
  endpoint: IdempotentEndpoint;
  body: Record<string, unknown>;
}

/** The answer of one run of the creation, as the routes made it. */
export interface CreationRun {
  answer: StoredAnswer;
  /**
   * Postgres could not settle the creation (503 `database_unreachable`): links may exist, so the
   * key stays with this attempt until its deadline passes and a retry settles it.
   */
  outcomeUnknown?: boolean;
}

/** The attempt that owns a key, as the creation runs it. */
export interface OwnedAttempt {
  /** The creation request id the key records: the job and its exactly-once row use it. */
  creationRequestId: string;
  /** When the key was claimed (database clock): the clock the request is checked with. */
  checkedAt: Date;
  /**
   * Called before the job is submitted. From then on links may exist whatever happens, so the
   * key must not be freed: a throw after it keeps the record until its deadline.
   */
  onJob: () => void;
}

/** What the service asks of the routes: run the creation, or rebuild an answer from results. */
export interface IdempotentCreation {
  /** Runs the creation as the key's owner. */
  run: (attempt: OwnedAttempt) => Promise<CreationRun>;
  /**
   * The answer of a creation its gateway never answered (it died), from the worker's results;
   * `checkedAt` is the clock the owner checked the request with.
   */
  rebuild: (results: CreateLinksResult, checkedAt: Date) => Promise<StoredAnswer>;
}

export type IdempotentOutcome =
  | { kind: 'answered'; answer: StoredAnswer; replayed: boolean }
  /** The key was used with another request (body or endpoint) in the last 24 hours. */
  | { kind: 'key_reused' }
  /** The first request with the key had not finished within the creation timeout. */
  | { kind: 'in_progress' };

export interface IdempotencyDeps {
  keys: Pick<IdempotencyKeysRepository, 'claim' | 'read' | 'storeAnswer' | 'release'>;
  requests: Pick<CreationRequestsRepository, 'abandonOrRead'>;
  /** CREATION_TIMEOUT_MS: how long a request waits for the first one with its key. */
  creationTimeoutMs: number;
  /** API_REQUEST_BUDGET_MS: the bound of each key statement, like any request's queries. */
  queryTimeoutMs: number;
  logger: Logger;
  /** How often a waiting request reads the key's record again. */
  pollIntervalMs?: number;
  /** The wait's clock and timer; the real ones unless a test brings its own. */
  clock?: Clock;
}

export interface Clock {
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

const REAL_CLOCK: Clock = { now: () => Date.now(), sleep: (ms) => sleep(ms) };

/** 503 and 429 created nothing and say "retry"; 500 is ours. Everything else is kept. */
function isStored(status: number): boolean {
  return status < 500 && status !== 429;
}

/**
 * JSON with every object's keys sorted, recursively: two bodies that differ only in key order
 * are the same request. Written out by hand, since copying into a sorted object would lose a
 * member named `__proto__`.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 of the endpoint and the canonical body: all that is kept of the request. */
export function requestHash(endpoint: IdempotentEndpoint, body: Record<string, unknown>): string {
  return createHash('sha256')
    .update(`${endpoint}\n${canonicalJson(body)}`)
    .digest('hex');
}

/**
 * The Idempotency-Key rules (docs/decisions.md): the first request with a key owns it and runs
 * the creation under the creation request id the key records; its answer is stored unless it
 * created nothing (503, 429, 500). A later request with the same key and request replays the
 * stored answer, waits while the owner runs, and settles the owner's creation request through
 * the creation protocol when the owner's deadline passed unanswered (its gateway died): the
 * worker's exactly-once row then decides whether links exist. Returns values; the routes make
 * HTTP of them.
 */
export class IdempotencyService {
  private readonly pollIntervalMs: number;
  private readonly clock: Clock;
  /**
   * How long an attempt owns its key without an answer: its claim, the creation
   * (CREATION_TIMEOUT_MS), the settle and storing the answer, plus a margin. Past it the worker
   * can no longer commit the attempt (its job's deadline plus COMMIT_GRACE_MS is long gone), so
   * settling it decides for good.
   */
  private readonly leaseMs: number;

  constructor(private readonly deps: IdempotencyDeps) {
    this.pollIntervalMs = deps.pollIntervalMs ?? 40;
    this.clock = deps.clock ?? REAL_CLOCK;
    this.leaseMs = deps.creationTimeoutMs + SETTLE_DEADLINE_MS + 2 * deps.queryTimeoutMs + 1_000;
  }

  async answer(
    request: IdempotentRequest,
    creation: IdempotentCreation,
  ): Promise<IdempotentOutcome> {
    const id: IdempotencyKeyId = {
      appId: request.appId,
      environment: request.environment,
      key: request.key,
    };
    const hash = requestHash(request.endpoint, request.body);
    // Counted from this request's arrival: a waiter answers within the creation timeout too.
    const waitUntil = this.clock.now() + this.deps.creationTimeoutMs;
    // Only the first statement, and one after the key was found free, is the claim (an upsert
    // that locks the row); a waiter polls with a plain read, so it never queues on the row.
    let claimNext = true;
    for (;;) {
      let record: KeyRecord | undefined;
      if (claimNext) {
        const creationRequestId = newCreationRequestId();
        const claim = await this.query(() =>
          this.deps.keys.claim(id, { requestHash: hash, creationRequestId, leaseMs: this.leaseMs }),
        );
        if (claim?.kind === 'claimed') {
          return this.runAsOwner(id, creationRequestId, claim.claimedAt, creation);
        }
        claimNext = false;
        // The row that blocked the claim was committed after its snapshot (or is a takeover of
        // the expired row the snapshot saw): read it at once, the read sees the committed row.
        if (claim === undefined) continue;
        record = claim;
      } else {
        record = await this.query(() => this.deps.keys.read(id));
        if (record === undefined) {
          // Free again: the owner created nothing (its record dropped) or the key expired. Past
          // its wait a request does not start a creation of its own (that would answer a full
          // creation timeout later): it answers 409 and the caller's retry claims.
          claimNext = true;
          if (this.clock.now() >= waitUntil) return { kind: 'in_progress' };
          continue;
        }
      }
      if (record.requestHash !== hash) return { kind: 'key_reused' };
      if (record.answer) return { kind: 'answered', answer: record.answer, replayed: true };
      if (record.ownerGone) {
        const settled = await this.settleGoneOwner(id, record, creation);
        if (settled) return settled;
        // The key is free again (or another request stored its answer): claim it at once.
        claimNext = true;
        continue;
      }
      if (this.clock.now() + this.pollIntervalMs >= waitUntil) return { kind: 'in_progress' };
      await this.clock.sleep(this.pollIntervalMs);
    }
  }

  private async runAsOwner(
    id: IdempotencyKeyId,
    creationRequestId: string,
    claimedAt: Date,
    creation: IdempotentCreation,
  ): Promise<IdempotentOutcome> {
    // An object, not a flag: the callback sets it while run() is awaited.
    const job = { submitted: false };
    let run: CreationRun;
    try {
      run = await creation.run({
        creationRequestId,
        checkedAt: claimedAt,
        onJob: () => {
          job.submitted = true;
        },
      });
    } catch (error) {
      if (job.submitted) {
        // Thrown after the job went out (a bug reading its results): links may exist. The key
        // stays with this attempt until its deadline; a retry then settles its creation request.
        this.deps.logger.warn(
          { creationRequestId },
          'idempotency key kept after a failed creation whose job was submitted',
        );
      } else {
        // Thrown before anything could be created (the limiter's Redis away, or a bug): free
        // the key so a retry runs again. The error middleware answers (503 or 500).
        await this.releaseQuietly(id, creationRequestId);
      }
      throw error;
    }
    const { answer } = run;
    if (isStored(answer.status)) {
      await this.storeQuietly(id, creationRequestId, answer);
    } else if (!run.outcomeUnknown) {
      await this.releaseQuietly(id, creationRequestId);
    }
    return { kind: 'answered', answer, replayed: false };
  }

  /**
   * The owner's deadline passed without an answer: its gateway died or lost Postgres. Settling
   * its creation request either finds the worker's committed results (the answer is rebuilt
   * from them, stored and replayed) or makes sure nothing will be created (the key is freed and
   * the caller claims it anew). Undefined: claim again.
   */
  private async settleGoneOwner(
    id: IdempotencyKeyId,
    { creationRequestId, claimedAt }: KeyRecord,
    creation: IdempotentCreation,
  ): Promise<IdempotentOutcome | undefined> {
    // Its own scope, as in the creation client: the insert may wait on the worker's row lock.
    const settled = await withQueryDeadline(SETTLE_DEADLINE_MS, () =>
      this.deps.requests.abandonOrRead(creationRequestId, id.appId),
    );
    switch (settled.kind) {
      case 'done': {
        const answer = await creation.rebuild(
          createLinksResultSchema.parse(settled.results),
          claimedAt,
        );
        if (!isStored(answer.status)) {
          // The worker created nothing (its only entry refused as rate_limited): as after the
          // owner's own 429, the key is freed so a retry can succeed; this answer is not kept.
          await this.query(() => this.deps.keys.release(id, creationRequestId));
          return { kind: 'answered', answer, replayed: true };
        }
        const stored = await this.query(() =>
          this.deps.keys.storeAnswer(id, creationRequestId, answer),
        );
        return stored ? { kind: 'answered', answer, replayed: true } : undefined;
      }
      case 'abandoned':
      case 'already_abandoned':
        await this.query(() => this.deps.keys.release(id, creationRequestId));
        return undefined;
    }
  }

  /**
   * Storing happens after the creation answered: a failure must not change that answer (the
   * links exist). The record keeps running until its deadline; a retry then settles it.
   */
  private async storeQuietly(
    id: IdempotencyKeyId,
    creationRequestId: string,
    answer: StoredAnswer,
  ): Promise<void> {
    try {
      const stored = await this.query(() =>
        this.deps.keys.storeAnswer(id, creationRequestId, answer),
      );
      if (!stored) {
        this.deps.logger.warn(
          { creationRequestId },
          'idempotency key was settled by another request before its answer was stored',
        );
      }
    } catch (error) {
      this.deps.logger.warn(
        { err: error, creationRequestId },
        'could not store the answer of an idempotency key',
      );
    }
  }

  /** Best effort: a record left behind only makes retries wait until its deadline passes. */
  private async releaseQuietly(id: IdempotencyKeyId, creationRequestId: string): Promise<void> {
    try {
      await this.query(() => this.deps.keys.release(id, creationRequestId));
    } catch (error) {
      this.deps.logger.warn(
        { err: error, creationRequestId },
        'could not release an idempotency key',
      );
    }
  }

  /**
   * Each key statement gets the request budget of its own: the store runs after a creation that
   * may have outlasted the request's scope, and a waiter's polls come long after its arrival.
   */
  private query<T>(fn: () => Promise<T>): Promise<T> {
    return withQueryDeadline(this.deps.queryTimeoutMs, fn);
  }
}
