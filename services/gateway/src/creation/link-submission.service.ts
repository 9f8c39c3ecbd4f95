import { randomUUID } from 'node:crypto';
import type { FieldErrors, Link } from '@linkservice/contracts';
import { parseLinkCreate } from '@linkservice/contracts';
import type { Environment } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';
import { setSpanAttributes } from '@linkservice/telemetry';
import type {
  CreateLinksPayload,
  CreateLinksResult,
  CreationClient,
  CreationOutcome,
  UnavailableReason,
} from '@linkservice/creation';
import type {
  CreationLimiter,
  CreationLimitState,
  CreationReservation,
} from '../limits/creation-limiter';
import type { BatchReport } from './batch-request';
import { checkBatchEntries, checkBatchRequest, mergeBatchResults } from './batch-request';

export interface LinkSubmissionDeps {
  creations: CreationClient;
  creationLimiter: Pick<CreationLimiter, 'state' | 'reserve' | 'release' | 'unusedWindow'>;
  /**
   * How long a creation may take before it answers 503, counted from the limiter's reservation:
   * the reservation's Redis call spends this budget too, so a creation answers within it plus
   * the settle and the release (see submitWithin).
   */
  creationTimeoutMs: number;
  logger: Logger;
  /** Told of every creation answered 503 (`linkservice_creation_timeouts_total`). */
  onUnavailable?: (reason: UnavailableReason) => void;
  /**
   * Awaited once the worker's transaction committed, before the answer: records the app's write
   * fence (ReadYourWrites.written), so its next read on a replica sees the new links.
   */
  onCommitted?: (scope: { appId: string; environment: Environment }) => Promise<void>;
}

/** Whose links these are: always the app and environment of the authenticating key. */
export interface CreationScope {
  appId: string;
  environment: Environment;
  /** The request's X-Request-Id, handed on to the worker's span and log. */
  httpRequestId?: string;
  /**
   * The creation request id an Idempotency-Key recorded for this attempt, so the worker's
   * exactly-once row of this id decides whether the key's links exist. Otherwise a new one.
   */
  creationRequestId?: string;
  /**
   * The clock a batch's entries are checked with ("expiresAt in the future"). An Idempotency-Key
   * gives its claim time, so an answer rebuilt from the worker's results later judges the
   * entries the worker never saw exactly as this attempt did. Otherwise the current time.
   */
  checkedAt?: Date;
  /**
   * Told the job id as soon as it is made, before the job is submitted, so the request's log
   * line names the job even when the answer is a 503 (and a key's owner knows links may exist).
   */
  onJob?: (jobId: string) => void;
}

type Invalid = { kind: 'invalid'; fieldErrors: FieldErrors; limit: CreationLimitState };
type Unavailable = { kind: 'unavailable'; reason: UnavailableReason; limit: CreationLimitState };

/** Every outcome carries the limiter's state for the RateLimit-* headers. */
export type CreateLinkOutcome =
  | { kind: 'created'; link: Link; limit: CreationLimitState }
  | Invalid
  | { kind: 'plan_limit_reached'; limit: CreationLimitState }
  | { kind: 'rate_limited'; limit: CreationLimitState }
  | Unavailable;

export type CreateBatchOutcome =
  { kind: 'reported'; report: BatchReport; limit: CreationLimitState } | Invalid | Unavailable;

/** What came of a submitted job: the worker's results, or an unavailable outcome to answer. */
type Submitted = Extract<CreationOutcome, { kind: 'completed' }> | Unavailable;

/**
 * The job id and creation_requests key: unique per attempt, never derived from input. An
 * Idempotency-Key records the one of its owning attempt (idempotency.service.ts).
 */
export function newCreationRequestId(): string {
  return `crt_${randomUUID()}`;
}

/**
 * The gateway's half of link creation: validates, reserves units of the hourly limit, submits the
 * valid entries to the worker as one job and waits for its answer, then gives back every
 * reserved unit that did not become a link. Returns values; the routes turn them into HTTP.
 */
export class LinkSubmissionService {
  constructor(private readonly deps: LinkSubmissionDeps) {}

  async createLink(
    scope: CreationScope,
    body: Record<string, unknown>,
  ): Promise<CreateLinkOutcome> {
    const parsed = parseLinkCreate(body);
    if (!parsed.ok) return this.invalid(scope, parsed.fieldErrors);

    const deadline = this.creationDeadline();
    const reservation = await this.deps.creationLimiter.reserve(scope.appId, 1);
    // Nothing could be created: no job, and no unit to give back (reserve kept none).
    if (reservation.granted === 0) return { kind: 'rate_limited', limit: reservation };

    const submitted = await this.submit(scope, deadline, reservation, {
      entries: [{ index: 0, draft: parsed.draft }],
      entryCount: 1,
    });
    if (submitted.kind === 'unavailable') return submitted;

    const entry = singleEntryOf(submitted.result);
    if (entry.ok) {
      setSpanAttributes({ 'linkservice.link_id': entry.link.id });
      return { kind: 'created', link: entry.link, limit: reservation };
    }

    const limit = await this.release(scope.appId, 1, reservation);
    return failedLinkOutcome(entry, limit);
  }

  async createBatch(
    scope: CreationScope,
    body: Record<string, unknown>,
  ): Promise<CreateBatchOutcome> {
    const request = checkBatchRequest(body);
    if (!request.ok) return this.invalid(scope, request.fieldErrors);

    // One clock for the whole batch, so "expiresAt in the future" means the same for every entry.
    const { valid, failures: gatewayFailures } = checkBatchEntries(
      request.entries,
      scope.checkedAt ?? new Date(),
    );
    const entryCount = request.entries.length;

    if (valid.length === 0) {
      return {
        kind: 'reported',
        report: mergeBatchResults(entryCount, gatewayFailures, undefined),
        limit: await this.deps.creationLimiter.state(scope.appId),
      };
    }

    // Fewer units than valid entries is still worth a job: the worker decides in order, so
    // entries that fail there (alias taken) come before the first one refused as rate_limited.
    const deadline = this.creationDeadline();
    const reservation = await this.deps.creationLimiter.reserve(scope.appId, valid.length);
    const submitted = await this.submit(scope, deadline, reservation, {
      entries: valid,
      entryCount,
    });
    if (submitted.kind === 'unavailable') return submitted;

    const report = mergeBatchResults(entryCount, gatewayFailures, submitted.result);
    const unused = reservation.granted - report.created;
    return {
      kind: 'reported',
      report,
      limit: await this.release(scope.appId, unused, reservation),
    };
  }

  /**
   * The answer of a POST /links whose gateway never answered (it died), from the results the
   * worker committed: an Idempotency-Key's retry replays it. The units stay as the dead gateway
   * left them (used: the safe direction); the headers show the limiter's state now.
   */
  async rebuildLink(scope: CreationScope, result: CreateLinksResult): Promise<CreateLinkOutcome> {
    const limit = await this.limitStateForRebuild(scope.appId);
    const entry = singleEntryOf(result);
    return entry.ok
      ? { kind: 'created', link: entry.link, limit }
      : failedLinkOutcome(entry, limit);
  }

  /**
   * rebuildLink's batch form: the body (the same, the key's hash says so) gives the entries the
   * gateway refused, checked with the owner's clock (scope.checkedAt, the key's claim time), so
   * an entry that was valid then and that the worker did not reach (stopped early) stays not
   * attempted even when its expiresAt has passed since. An entry the worker has a result for
   * keeps that result.
   */
  async rebuildBatch(
    scope: CreationScope,
    body: Record<string, unknown>,
    result: CreateLinksResult,
  ): Promise<CreateBatchOutcome> {
    const request = checkBatchRequest(body);
    if (!request.ok) throw new Error('a batch the worker created from no longer validates');
    const byWorker = new Set(result.results.map((entry) => entry.index));
    const gatewayFailures = checkBatchEntries(
      request.entries,
      scope.checkedAt ?? new Date(),
    ).failures.filter((failure) => !byWorker.has(failure.index));
    return {
      kind: 'reported',
      report: mergeBatchResults(request.entries.length, gatewayFailures, result),
      limit: await this.limitStateForRebuild(scope.appId),
    };
  }

  /** A request refused before anything was reserved: the limiter's state as it stands. */
  private async invalid(scope: CreationScope, fieldErrors: FieldErrors): Promise<Invalid> {
    return {
      kind: 'invalid',
      fieldErrors,
      limit: await this.deps.creationLimiter.state(scope.appId),
    };
  }

  /**
   * Hands the entries to the worker as one job with the reservation's units, and waits until
   * `deadline`. When that fails, the units come back unless links may exist.
   */
  private async submit(
    scope: CreationScope,
    deadline: number,
    reservation: CreationReservation,
    job: { entries: CreateLinksPayload['entries']; entryCount: number },
  ): Promise<Submitted> {
    const requestId = scope.creationRequestId ?? newCreationRequestId();
    scope.onJob?.(requestId);
    setSpanAttributes({ 'linkservice.job_id': requestId, 'linkservice.entries': job.entryCount });
    const outcome = await this.deps.creations.submit(
      {
        requestId,
        appId: scope.appId,
        environment: scope.environment,
        ...(scope.httpRequestId === undefined ? {} : { httpRequestId: scope.httpRequestId }),
        entries: job.entries,
        creationBudget: reservation.granted,
      },
      remainingMs(deadline),
    );
    if (outcome.kind === 'completed') {
      await this.deps.onCommitted?.({ appId: scope.appId, environment: scope.environment });
      return outcome;
    }
    this.deps.onUnavailable?.(outcome.reason);
    return {
      kind: 'unavailable',
      reason: outcome.reason,
      limit: await this.releaseUnlessUnknown(outcome, reservation.granted, scope, reservation),
    };
  }

  /**
   * A rebuilt answer is in Postgres already, and a replay calls no limiter: Redis being away
   * must not turn it into a 503. The headers then show an unused window (the limit, all of it
   * left, the whole hour to its reset): at worst the caller meets a 429 that tells it when to
   * retry, where a made-up "0 left" could stall it for an hour.
   */
  private async limitStateForRebuild(appId: string): Promise<CreationLimitState> {
    try {
      return await this.deps.creationLimiter.state(appId);
    } catch (error) {
      this.deps.logger.warn(
        { err: error, appId },
        'could not read the creation limit for a rebuild',
      );
      return this.deps.creationLimiter.unusedWindow();
    }
  }

  /**
   * Epoch ms by which the worker must have answered: CREATION_TIMEOUT_MS from before the
   * limiter's reservation, so a Redis that answers slowly (up to REDIS_COMMAND_TIMEOUT_MS per
   * command) spends the creation's budget instead of adding to it.
   */
  private creationDeadline(): number {
    return Date.now() + this.deps.creationTimeoutMs;
  }

  /**
   * After an unavailable outcome nothing was created, except when Postgres could not settle the
   * request: the worker's transaction may then have committed, so its units stay used.
   */
  private releaseUnlessUnknown(
    outcome: Extract<CreationOutcome, { kind: 'unavailable' }>,
    units: number,
    scope: CreationScope,
    reservation: CreationLimitState,
  ): Promise<CreationLimitState> {
    if (outcome.reason === 'database_unreachable') return Promise.resolve(reservation);
    return this.release(scope.appId, units, reservation);
  }

  /**
   * Gives unused units back. When Redis fails here the links are already decided, so the answer
   * must not change: the units stay used until the window ends (the safe direction).
   */
  private async release(
    appId: string,
    units: number,
    fallback: CreationLimitState,
  ): Promise<CreationLimitState> {
    if (units <= 0) return fallback;
    try {
      return await this.deps.creationLimiter.release(appId, units);
    } catch (error) {
      this.deps.logger.warn({ err: error, appId, units }, 'could not release creation units');
      return fallback;
    }
  }
}

function singleEntryOf(result: CreateLinksResult): CreateLinksResult['results'][number] {
  const entry = result.results.find((candidate) => candidate.index === 0);
  if (!entry) throw new Error('creation job answered without a result for entry 0');
  return entry;
}

function failedLinkOutcome(
  entry: Extract<CreateLinksResult['results'][number], { ok: false }>,
  limit: CreationLimitState,
): CreateLinkOutcome {
  switch (entry.error) {
    case 'validation_failed':
      return { kind: 'invalid', fieldErrors: entry.fieldErrors ?? {}, limit };
    case 'plan_limit_reached':
      return { kind: 'plan_limit_reached', limit };
    case 'rate_limited':
      return { kind: 'rate_limited', limit };
  }
}

/**
 * What is left until `deadline`. At 0 the job is still added and settled at once: the settle
 * then abandons it, and the reserved units come back.
 */
export function remainingMs(deadline: number, now = Date.now()): number {
  return Math.max(0, deadline - now);
}
