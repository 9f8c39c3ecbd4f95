import { setTimeout as sleep } from 'node:timers/promises';
import type { StoredLink } from '@linkservice/contracts';
import { insertColumnsOf, toLink } from '@linkservice/contracts';
import type { Environment } from '@linkservice/db';
import { newId } from '@linkservice/db';
import type { LinkCache, LinkRef } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type {
  ClaimedApp,
  CreateLinksJobResult,
  CreateLinksPayload,
  CreateLinksResult,
  CreationTransaction,
  CreationTransactions,
  EntryResult,
} from '@linkservice/creation';
import { COMMIT_GRACE_MS, isLockTimeout } from '@linkservice/creation';
import type { CreationPlan, PlannedLink } from './creation-plan';
import { planCreations } from './creation-plan';
import { generateAliases } from './generated-alias';
import type { LinksRepository } from './links.repository';
import { aliasKey } from './links.repository';

/** Generated aliases that collide with existing links are redrawn at most this many times. */
const MAX_ALIAS_ROUNDS = 5;

/**
 * The longest a transaction of several requests waits for one lock. Groups of one app queue on
 * its row for a few milliseconds each; past this, a lock is held long (a large batch, a stalled
 * worker) and the group goes on request by request (see createGroup).
 */
export const GROUP_LOCK_TIMEOUT_MS = 200;

export interface LinkCreationOptions {
  linkDomain: string;
  logger: Logger;
  /** Test-only pause inside the transaction (see WORKER_TEST_DELAY_MS). */
  testDelayMs?: number;
  /**
   * The link host's resolution cache. A caller alias may be cached there as "no such link"; it
   * is dropped after the commit so the new link resolves at once (see dropCachedMisses). It must use the Redis
   * connection the BullMQ Worker completes jobs on (the drop is not awaited; see createLinks).
   * Absent only where no link host runs (service-level tests).
   */
  linkCache?: Pick<LinkCache, 'invalidate'>;
  /** Draws generated aliases; generateAliases unless a test needs a collision. */
  drawAliases?: (count: number, avoid: ReadonlySet<string>) => string[];
}

/** What one group transaction decided: every request's answer, and whether to commit. */
interface GroupOutcome {
  commit: boolean;
  answers: Map<string, CreateLinksJobResult>;
  /**
   * The links this transaction inserts under caller aliases, whose "no such link" entries the
   * link host's cache may hold: dropped once it has committed (see dropCachedMisses).
   */
  callerAliased: LinkRef[];
}

/** A claimed request, its app as the claim read it, and its plan. */
interface PlannedRequest {
  payload: CreateLinksPayload;
  app: ClaimedApp;
  plan: CreationPlan;
}

/** A link about to be inserted: its request, entry and alias. */
interface PendingLink extends AliasedLink {
  request: PlannedRequest;
}

const DEADLINE_PASSED: CreateLinksJobResult = { status: 'abandoned', reason: 'deadline_passed' };

/**
 * Runs creation requests exactly once each, a group of them in one transaction (group commit):
 * claim every request and lock their apps, decide every entry of every request in order, insert
 * all new links in one statement, record each request's outcome, COMMIT. A crash before COMMIT
 * leaves nothing; a redelivery after COMMIT returns the stored results. Expected refusals are
 * values in the results; anything unexpected throws (and rolls back) so BullMQ can retry while
 * the deadline allows. The protocol's steps are @linkservice/creation's (see its README); this
 * service decides and writes the links.
 */
export class LinkCreationService {
  constructor(
    private readonly transactions: CreationTransactions,
    private readonly links: LinksRepository,
    private readonly options: LinkCreationOptions,
  ) {}

  /** One request on its own: a group of one. */
  async createLinks(payload: CreateLinksPayload): Promise<CreateLinksJobResult> {
    const answer = (await this.createGroup([payload])).get(payload.requestId);
    if (!answer) throw new Error(`no answer for ${payload.requestId}`);
    return answer;
  }

  /**
   * Every request's answer, by request id. When the group's transaction throws, each request is
   * tried again in a transaction of its own, so one request that cannot be created (whatever the
   * reason) costs the others nothing; if any still throws, this throws, and the job's retry
   * answers the committed ones from their rows.
   */
  async createGroup(
    requests: readonly CreateLinksPayload[],
  ): Promise<Map<string, CreateLinksJobResult>> {
    if (requests.length === 1) return this.createInOneTransaction(requests);
    // A group waits for a lock (an app's row held by a long job of that app) only briefly: the
    // other apps' requests must not wait with it until their deadlines.
    try {
      return await this.createInOneTransaction(requests, GROUP_LOCK_TIMEOUT_MS);
    } catch (error) {
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
        const answer = (await this.createInOneTransaction([request], lockTimeoutMs)).get(
          request.requestId,
        );
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

  private async createInOneTransaction(
    requests: readonly CreateLinksPayload[],
    lockTimeoutMs?: number,
  ): Promise<Map<string, CreateLinksJobResult>> {
    // Requests the gateway has stopped waiting for: creating now could only leave an outcome
    // nobody reports. Their rows stay absent, so the gateway's settle abandons them.
    const now = Date.now();
    const answers = new Map<string, CreateLinksJobResult>();
    const live = requests.filter((request) => {
      if (now < request.deadline) return true;
      answers.set(request.requestId, DEADLINE_PASSED);
      return false;
    });
    if (live.length === 0) return answers;
    // The group commits once, so by its earliest deadline: every request's grace still holds.
    const commitBy = Math.min(...live.map((request) => request.deadline)) + COMMIT_GRACE_MS;
    const outcome = await this.transactions.run(
      commitBy - Date.now(),
      async (tx) => {
        const decided = await this.decideAndInsert(tx, live, commitBy);
        if (decided.commit) await tx.commit();
        return decided;
      },
      lockTimeoutMs === undefined ? {} : { lockTimeoutMs },
    );
    // Not awaited: the invalidation is written to Redis now, on the connection BullMQ reports the
    // job's completion on (see worker.ts), and Redis runs one connection's commands in order, so
    // it is done before the completion event the gateway waits for exists. Awaiting its reply
    // would add a round trip before every answer.
    if (outcome.commit) void this.dropCachedMisses(outcome.callerAliased);
    for (const [requestId, answer] of outcome.answers) answers.set(requestId, answer);
    return answers;
  }

  /**
   * After the commit (before, a redirect could cache the miss again). Only caller aliases: a
   * generated alias is eight random base62 characters drawn just now, which nobody can have
   * asked the link host for except by guessing one in 2 * 10^14 within the negative entry's few
   * seconds, so the job skips the Redis call for it (most creations). On failure the links still
   * exist: they resolve once the link host's negative entry expires (seconds), so it is logged.
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

  /**
   * Claims, plans and inserts. Requests are planned in the group's order, each against what the
   * ones before it will have created: an app's link count grows by its earlier requests' links,
   * and an alias an earlier request takes is taken for the later ones, exactly as if each request
   * had been its own transaction, one after the other.
   */
  private async decideAndInsert(
    tx: CreationTransaction,
    requests: readonly CreateLinksPayload[],
    commitBy: number,
  ): Promise<GroupOutcome> {
    const claims = await tx.claimAll(requests);
    const answers = new Map<string, CreateLinksJobResult>();
    const claimed: { payload: CreateLinksPayload; app: ClaimedApp }[] = [];
    for (const payload of requests) {
      const claim = claims.get(payload.requestId);
      if (!claim) throw new Error(`no claim for ${payload.requestId}`);
      // Decided before (an earlier delivery's results, or abandoned): answer that, create nothing.
      if (claim.kind === 'answered') answers.set(payload.requestId, claim.answer);
      else claimed.push({ payload, app: claim.app });
    }
    if (claimed.length === 0) return { commit: false, answers, callerAliased: [] };

    const callerAliases = claimed.flatMap(({ payload }) =>
      payload.entries.flatMap(({ draft }) =>
        draft.alias === null
          ? []
          : [{ appId: payload.appId, environment: payload.environment, alias: draft.alias }],
      ),
    );
    const taken = await this.links.takenAliases(tx, callerAliases);
    const linkCounts = new Map<string, number>();
    const planned = claimed.map(({ payload, app }): PlannedRequest => {
      const linkCount = linkCounts.get(payload.appId) ?? app.linkCount;
      const scope = { appId: payload.appId, environment: payload.environment };
      const plan = planCreations(
        payload.entries,
        new AliasesOf(taken, scope),
        { linkCount, linkAllowance: app.linkAllowance },
        payload.creationBudget,
      );
      linkCounts.set(payload.appId, linkCount + plan.toCreate.length);
      for (const { draft } of plan.toCreate) {
        if (draft.alias !== null) taken.add(aliasKey({ ...scope, alias: draft.alias }));
      }
      return { payload, app, plan };
    });

    if (this.options.testDelayMs) await sleep(this.options.testDelayMs);

    const inserted = await this.insertPlanned(tx, planned, commitBy);
    if (!inserted) return this.abandonedAll(requests, answers);

    const outcomes = new Map<string, CreateLinksResult>();
    const callerAliased: LinkRef[] = [];
    for (const request of planned) {
      const rows = inserted.get(request) ?? new Map<number, StoredLink>();
      outcomes.set(request.payload.requestId, this.resultOf(request.plan, rows, request.app));
      for (const { index, draft } of request.plan.toCreate) {
        const row = rows.get(index);
        if (draft.alias === null || !row) continue;
        callerAliased.push({
          subdomainKey: request.app.subdomainKey,
          environment: row.environment,
          alias: row.alias,
        });
      }
    }
    if (Date.now() >= commitBy || !(await tx.recordOutcomes(outcomes, commitBy))) {
      return this.abandonedAll(requests, answers);
    }
    for (const [requestId, result] of outcomes) {
      answers.set(requestId, { status: 'done', result });
    }
    this.options.logger.debug({ requests: planned.length }, 'creation group done');
    return { commit: true, answers, callerAliased };
  }

  /** Past the commit deadline: nothing commits, and the claimed requests were not created. */
  private abandonedAll(
    requests: readonly CreateLinksPayload[],
    decided: ReadonlyMap<string, CreateLinksJobResult>,
  ): GroupOutcome {
    const answers = new Map(
      requests.map(({ requestId }) => [requestId, decided.get(requestId) ?? DEADLINE_PASSED]),
    );
    return { commit: false, answers, callerAliased: [] };
  }

  /**
   * Inserts every planned link of the group in one statement, whose returned rows become the
   * results: the answer is what the database stored, read as every later GET reads it. Caller
   * aliases were checked under the apps' locks, so only generated aliases can collide (with links
   * made earlier): the insert skips those rows, and their entries are redrawn and inserted again,
   * a bounded number of times. Undefined when the deadline passed: the transaction must roll back.
   */
  private async insertPlanned(
    tx: CreationTransaction,
    planned: readonly PlannedRequest[],
    commitBy: number,
  ): Promise<Map<PlannedRequest, Map<number, StoredLink>> | undefined> {
    const inserted = new Map<PlannedRequest, Map<number, StoredLink>>(
      planned.map((request) => [request, new Map()]),
    );
    // Ids drawn once, in entry order, so a redrawn alias does not reorder a batch's ids.
    const ids = new Map<PlannedLink, string>();
    const usedAliases = new Set<string>();
    const drawAliases = this.options.drawAliases ?? generateAliases;
    for (const { plan } of planned) {
      for (const link of plan.toCreate) {
        ids.set(link, newId('lnk'));
        if (link.draft.alias !== null) usedAliases.add(link.draft.alias);
      }
    }
    let pending = planned.flatMap((request) =>
      withAliases(request.plan.toCreate, usedAliases, drawAliases).map((link): PendingLink => ({
        ...link,
        request,
      })),
    );

    for (let round = 1; pending.length > 0; round++) {
      if (round > MAX_ALIAS_ROUNDS) {
        throw new Error(`no free generated alias after ${MAX_ALIAS_ROUNDS} rounds`);
      }
      // Both clocks must agree there is still time; storing the outcome checks the database's.
      if (Date.now() >= commitBy) return undefined;
      const rows = await this.links.insertLinks(
        tx,
        pending.map((link) => ({
          ...insertColumnsOf(link.draft),
          id: ids.get(link.planned) ?? newId('lnk'),
          app_id: link.request.payload.appId,
          environment: link.request.payload.environment,
          alias: link.alias,
        })),
      );
      const stored = new Map(
        rows.map((row) => [
          aliasKey({ appId: row.app_id, environment: row.environment, alias: row.alias }),
          row,
        ]),
      );
      const collided: PendingLink[] = [];
      for (const link of pending) {
        const { appId, environment } = link.request.payload;
        const row = stored.get(aliasKey({ appId, environment, alias: link.alias }));
        if (row) inserted.get(link.request)?.set(link.index, row);
        else if (link.generated) collided.push(link);
        else throw new Error(`caller alias of entry ${link.index} collided after the check`);
      }
      pending = collided.flatMap((link) =>
        withAliases([link.planned], usedAliases, drawAliases).map((redrawn): PendingLink => ({
          ...redrawn,
          request: link.request,
        })),
      );
    }
    return inserted;
  }

  /** A request's answer: its plan's refusals and the links created, in entry order. */
  private resultOf(
    plan: CreationPlan,
    created: ReadonlyMap<number, StoredLink>,
    app: ClaimedApp,
  ): CreateLinksResult {
    const context = { subdomainKey: app.subdomainKey, linkDomain: this.options.linkDomain };
    const createdEntries: EntryResult[] = [...created].map(([index, row]) => ({
      index,
      ok: true,
      link: toLink(row, context),
    }));
    return {
      results: [...plan.refused, ...createdEntries].sort((a, b) => a.index - b.index),
      ...(plan.stoppedEarly ? { stoppedEarly: plan.stoppedEarly } : {}),
    };
  }
}

/** The taken aliases of one app and environment, as the plan asks for them. */
class AliasesOf implements Pick<ReadonlySet<string>, 'has'> {
  constructor(
    private readonly taken: ReadonlySet<string>,
    private readonly scope: { appId: string; environment: Environment },
  ) {}

  has(alias: string): boolean {
    return this.taken.has(aliasKey({ ...this.scope, alias }));
  }
}

interface AliasedLink extends PlannedLink {
  alias: string;
  generated: boolean;
  /** The plan's entry it came from, which keeps its id through redraws. */
  planned: PlannedLink;
}

/** Gives each entry without a caller alias a fresh generated one not used in this group yet. */
function withAliases(
  planned: readonly PlannedLink[],
  usedAliases: Set<string>,
  drawAliases: (count: number, avoid: ReadonlySet<string>) => string[],
): AliasedLink[] {
  const needed = planned.filter(({ draft }) => draft.alias === null).length;
  const generated = drawAliases(needed, usedAliases);
  for (const alias of generated) usedAliases.add(alias);
  return planned.map((link) => {
    const { index, draft } = link;
    if (draft.alias !== null) {
      return { index, draft, alias: draft.alias, generated: false, planned: link };
    }
    const alias = generated.shift();
    if (alias === undefined) throw new Error('fewer generated aliases than entries needing one');
    return { index, draft, alias, generated: true, planned: link };
  });
}
