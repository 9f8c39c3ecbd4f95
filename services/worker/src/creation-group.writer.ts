import { setTimeout as sleep } from 'node:timers/promises';
import type { LinkCache, LinkRef } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type {
  CreateLinksJobResult,
  CreateLinksPayload,
  CreationTransactions,
} from '@linkservice/creation';
import { COMMIT_GRACE_MS, isLockTimeout } from '@linkservice/creation';
import { formatExpiry, isReservedAlias } from '@linkservice/contracts';
import { newId } from '@linkservice/db';
import type { ClaimedRequest } from './creation-plan';
import { callerAliasesOf, planGroup } from './creation-plan';
import { generateAliases } from './generated-alias';
import type { DrawAliases } from './group-inserts';
import { callerAliasedOf, GroupInserts, outcomesOf } from './group-inserts';
import type { LinkInserts } from './link-inserts.repository';
import type { LoneAttempt, LoneCreations } from './lone-creation.repository';

/** Generated aliases that collide with existing links are redrawn at most this many times. */
const MAX_ALIAS_ROUNDS = 5;

/**
 * The longest a transaction of several requests waits for one lock. Groups of one app queue on
 * its row for a few milliseconds each; past this, a lock is held long (a large batch, a stalled
 * worker) and the group goes on request by request (see write).
 */
export const GROUP_LOCK_TIMEOUT_MS = 200;

/**
 * The longest the lone statement waits for a lock. It meets one only when something else
 * writes the same alias or request id at that moment (a redelivery, the gateway's settle); the
 * usual transaction then decides, with the waits its bounds allow.
 */
export const LONE_LOCK_TIMEOUT_MS = 50;

/**
 * Whether expiresAt is in the form formatExpiry prints, the gateway's normal form, which the
 * lone statement's SQL copy prints back.
 */
function isNormalisedExpiry(value: string): boolean {
  const instant = new Date(value);
  return !Number.isNaN(instant.getTime()) && formatExpiry(instant) === value;
}

const DEADLINE_PASSED: CreateLinksJobResult = { status: 'abandoned', reason: 'deadline_passed' };

export interface CreationGroupWriterOptions {
  linkDomain: string;
  logger: Logger;
  /** Test-only pause inside the transaction (see WORKER_TEST_DELAY_MS). */
  testDelayMs?: number;
  /**
   * The link host's resolution cache. A caller alias may be cached there as "no such link"; it
   * is dropped after the commit so the new link resolves at once (see dropCachedMisses). It must
   * use the Redis connection the BullMQ Worker completes jobs on (the drop is not awaited).
   * Absent only where no link host runs (service-level tests).
   */
  linkCache?: Pick<LinkCache, 'invalidate'>;
  /** Draws generated aliases; generateAliases unless a test needs a collision. */
  drawAliases?: DrawAliases;
  /** Told why a lone request went to the usual transaction (tests count the statements). */
  onLoneFallback?: (reason: Extract<LoneAttempt, { kind: 'not_created' }>['reason']) => void;
}

/**
 * Requests of a job whose app this database does not have. Apps are never deleted, so the job
 * was added by a gateway on another database: most likely another stack sharing this Redis and
 * REDIS_PREFIX. Thrown once the group's other requests are committed.
 */
export class AppNotFound extends Error {
  constructor(readonly requests: readonly CreateLinksPayload[]) {
    super(`no app ${[...new Set(requests.map(({ appId }) => appId))].join(', ')} in this database`);
  }
}

/**
 * Writes a group of creation requests exactly once each, in one transaction (group commit); the
 * protocol's steps are @linkservice/creation's (see its README), this class decides and writes
 * the links. writeGroup tells a group's story in order. Expected refusals are values in the
 * answers; anything unexpected throws (and rolls back), so BullMQ can retry while the deadline
 * allows.
 */
export class CreationGroupWriter {
  private readonly drawAliases: DrawAliases;

  constructor(
    private readonly transactions: CreationTransactions,
    private readonly links: LinkInserts,
    private readonly lone: LoneCreations,
    private readonly options: CreationGroupWriterOptions,
  ) {
    this.drawAliases = options.drawAliases ?? generateAliases;
  }

  /**
   * Every request's answer, by request id. When the group's transaction throws, each request is
   * tried again in a transaction of its own, so one request that cannot be created (whatever the
   * reason) costs the others nothing; if any still throws, this throws, and the job's retry
   * answers the committed ones from their rows.
   */
  async write(requests: readonly CreateLinksPayload[]): Promise<Map<string, CreateLinksJobResult>> {
    if (requests.length === 1) {
      return (await this.writeAlone(requests[0])) ?? this.writeGroup(requests);
    }
    // A group waits for a lock (an app's row held by a long job of that app) only briefly: the
    // other apps' requests must not wait with it until their deadlines.
    try {
      return await this.writeGroup(requests, GROUP_LOCK_TIMEOUT_MS);
    } catch (error) {
      if (error instanceof AppNotFound) throw error;
      this.options.logger.warn(
        { err: error, requestIds: requests.map(({ requestId }) => requestId) },
        'creation group failed; trying its requests one by one',
      );
    }
    // One by one, first again without a long lock wait, so a request stuck behind a lock costs
    // the others nothing; the ones that were stuck last, waiting as long as their deadline allows.
    const answers = new Map<string, CreateLinksJobResult>();
    const blocked: CreateLinksPayload[] = [];
    let failure: Error | undefined;
    const attempt = async (request: CreateLinksPayload, lockTimeoutMs?: number) => {
      try {
        const answer = (await this.writeGroup([request], lockTimeoutMs)).get(request.requestId);
        if (answer) answers.set(request.requestId, answer);
      } catch (error) {
        if (lockTimeoutMs !== undefined && isLockTimeout(error)) {
          blocked.push(request);
          return;
        }
        this.options.logger.error(
          { err: error, requestId: request.requestId, reqId: request.httpRequestId },
          'creation request failed; rolled back',
        );
        failure ??= error instanceof Error ? error : new Error(String(error));
      }
    };
    for (const request of requests) await attempt(request, GROUP_LOCK_TIMEOUT_MS);
    for (const request of blocked) await attempt(request);
    if (failure) throw failure;
    return answers;
  }

  /**
   * The common case in one statement: a request alone in its job, of one entry that the plan
   * would create (a budget unit for it; no reserved alias). The statement creates the link, or
   * nothing at all (alias taken, allowance reached, deadline passed, the app's lock held, the
   * request decided already, an unknown app): then undefined, and the usual transaction decides
   * and answers the request exactly as it would have without this attempt.
   */
  private async writeAlone(
    request: CreateLinksPayload,
  ): Promise<Map<string, CreateLinksJobResult> | undefined> {
    const [entry] = request.entries;
    const { alias, expiresAt } = entry.draft;
    const commitBy = request.deadline + COMMIT_GRACE_MS;
    const now = Date.now();
    if (
      request.entries.length !== 1 ||
      request.creationBudget < 1 ||
      (alias !== null && isReservedAlias(alias)) ||
      (expiresAt !== null && !isNormalisedExpiry(expiresAt)) ||
      now >= request.deadline ||
      // The test-only pause models a slow transaction; the tests that set it mean that one.
      this.options.testDelayMs
    ) {
      return undefined;
    }
    const attempt = await this.lone.create({
      requestId: request.requestId,
      appId: request.appId,
      environment: request.environment,
      deadline: request.deadline,
      index: entry.index,
      id: newId('lnk'),
      alias: alias ?? this.drawAliases(1, new Set())[0],
      draft: entry.draft,
      traceparent: request.traceparent ?? '',
      linkDomain: this.options.linkDomain,
      lockTimeoutMs: Math.min(LONE_LOCK_TIMEOUT_MS, commitBy - now),
    });
    if (attempt.kind === 'not_created') {
      this.options.logger.debug(
        { requestId: request.requestId, reason: attempt.reason },
        'lone creation statement created nothing; the transaction decides',
      );
      this.options.onLoneFallback?.(attempt.reason);
      return undefined;
    }
    if (alias !== null) {
      // See writeGroup: sent before the job's completion, on the connection that reports it.
      const link = { subdomainKey: attempt.subdomainKey, environment: request.environment, alias };
      void this.dropCachedMisses([link]);
    }
    return new Map([[request.requestId, { status: 'done', result: attempt.result }]]);
  }

  /**
   * A group in one transaction, in order: leave out the requests past their deadline; claim the
   * others and lock their apps; plan every entry in arrival order; insert every link in one
   * statement (generated aliases that collided are redrawn); store each request's outcome while
   * there is time; commit; then drop the link host's cached misses of the new caller aliases.
   */
  private async writeGroup(
    requests: readonly CreateLinksPayload[],
    lockTimeoutMs?: number,
  ): Promise<Map<string, CreateLinksJobResult>> {
    // Requests the gateway has stopped waiting for: creating now could only leave an outcome
    // nobody reports. Their rows stay absent, so the gateway's settle abandons them.
    const answers = new Map<string, CreateLinksJobResult>();
    const now = Date.now();
    const live = requests.filter(({ requestId, deadline }) => {
      if (now < deadline) return true;
      answers.set(requestId, DEADLINE_PASSED);
      return false;
    });
    if (live.length === 0) return answers;
    // The group commits once, so by its earliest deadline: every request's grace still holds.
    const commitBy = Math.min(...live.map(({ deadline }) => deadline)) + COMMIT_GRACE_MS;
    const unknownApp: CreateLinksPayload[] = [];

    const committed = await this.transactions.run(
      commitBy - Date.now(),
      async (tx): Promise<LinkRef[] | undefined> => {
        const claims = await tx.claimAll(live);
        const claimed: ClaimedRequest[] = [];
        for (const payload of live) {
          const claim = claims.get(payload.requestId);
          if (!claim) throw new Error(`no claim for ${payload.requestId}`);
          // Decided before (an earlier delivery's results, or abandoned): answer that.
          if (claim.kind === 'answered') answers.set(payload.requestId, claim.answer);
          else if (claim.kind === 'unknown_app') unknownApp.push(payload);
          else claimed.push({ payload, app: claim.app });
        }
        if (claimed.length === 0) return undefined;

        const taken = await this.links.takenAliases(tx, callerAliasesOf(claimed));
        const planned = planGroup(claimed, taken);
        if (this.options.testDelayMs) await sleep(this.options.testDelayMs);

        const inserts = new GroupInserts(planned, this.drawAliases);
        for (let round = 1; !inserts.done; round++) {
          if (round > MAX_ALIAS_ROUNDS) {
            throw new Error(`no free generated alias after ${MAX_ALIAS_ROUNDS} rounds`);
          }
          // Both clocks must agree there is still time; storing the outcome checks the database's.
          if (Date.now() >= commitBy) return undefined;
          inserts.accept(await this.links.insertLinks(tx, inserts.rows(), inserts.traceparents()));
        }

        const outcomes = outcomesOf(inserts.stored, this.options.linkDomain);
        if (Date.now() >= commitBy || !(await tx.recordOutcomes(outcomes, commitBy))) {
          return undefined;
        }
        await tx.commit();
        for (const [requestId, result] of outcomes)
          answers.set(requestId, { status: 'done', result });
        this.options.logger.debug({ requests: planned.length }, 'creation group done');
        return callerAliasedOf(inserts.stored);
      },
      lockTimeoutMs === undefined ? {} : { lockTimeoutMs },
    );

    // Not awaited: the invalidation is written to Redis now, on the connection BullMQ reports the
    // job's completion on (see worker.ts), and Redis runs one connection's commands in order, so
    // it is done before the completion event the gateway waits for exists. Awaiting its reply
    // would add a round trip before every answer.
    if (committed) void this.dropCachedMisses(committed);
    // Claimed and not committed (past the commit deadline): nothing was created.
    for (const { requestId } of live)
      if (!answers.has(requestId)) answers.set(requestId, DEADLINE_PASSED);
    if (unknownApp.length > 0) throw new AppNotFound(unknownApp);
    return answers;
  }

  /**
   * After the commit (before, a redirect could cache the miss again). On failure the links
   * still exist: they resolve once the link host's negative entry expires (seconds), so it is
   * logged.
   */
  private async dropCachedMisses(callerAliased: LinkRef[]): Promise<void> {
    if (!this.options.linkCache || callerAliased.length === 0) return;
    try {
      await this.options.linkCache.invalidate(callerAliased);
    } catch (error) {
      this.options.logger.error(
        { err: error, links: callerAliased.length },
        'could not invalidate the link cache for new links',
      );
    }
  }
}
