import { setTimeout as sleep } from 'node:timers/promises';
import type { StoredLink } from '@linkservice/contracts';
import { insertColumnsOf, toLink } from '@linkservice/contracts';
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
import { COMMIT_GRACE_MS } from '@linkservice/creation';
import type { CreationPlan, PlannedLink } from './creation-plan';
import { planCreations } from './creation-plan';
import { generateAliases } from './generated-alias';
import type { LinksRepository } from './links.repository';

/** Generated aliases that collide with existing links are redrawn at most this many times. */
const MAX_ALIAS_ROUNDS = 5;

export interface LinkCreationOptions {
  linkDomain: string;
  logger: Logger;
  /** Test-only pause inside the transaction (see WORKER_TEST_DELAY_MS). */
  testDelayMs?: number;
  /**
   * The link host's resolution cache. A created alias may be cached there as "no such link";
   * it is dropped after the commit so the new link resolves at once. It must use the Redis
   * connection the BullMQ Worker completes jobs on (the drop is not awaited; see createLinks).
   * Absent only where no link host runs (service-level tests).
   */
  linkCache?: Pick<LinkCache, 'invalidate'>;
  /** Draws generated aliases; generateAliases unless a test needs a collision. */
  drawAliases?: (count: number, avoid: ReadonlySet<string>) => string[];
}

type TransactionOutcome = {
  commit: boolean;
  answer: CreateLinksJobResult;
  /** The links this transaction inserts, for the link host's cache once it has committed. */
  created?: LinkRef[];
};

const abandoned = (
  reason: 'deadline_passed' | 'abandoned_by_gateway',
  commit = false,
): TransactionOutcome => ({ commit, answer: { status: 'abandoned', reason } });

/**
 * Runs one creation job exactly once: claim the request, lock the app, decide every entry in
 * order, insert all new links, record the outcome, COMMIT, all in a single transaction. A crash
 * before COMMIT leaves nothing; a redelivery after COMMIT returns the stored results. Expected
 * refusals are values in the results; anything unexpected throws (and rolls back) so BullMQ can
 * retry while the deadline allows. The protocol's steps are @linkservice/creation's (see its
 * README); this service decides and writes the links.
 */
export class LinkCreationService {
  constructor(
    private readonly transactions: CreationTransactions,
    private readonly links: LinksRepository,
    private readonly options: LinkCreationOptions,
  ) {}

  async createLinks(payload: CreateLinksPayload): Promise<CreateLinksJobResult> {
    // The gateway has stopped waiting: creating now could only leave an outcome nobody reports.
    if (Date.now() >= payload.deadline) return abandoned('deadline_passed').answer;
    const commitBy = payload.deadline + COMMIT_GRACE_MS;
    const outcome = await this.transactions.run(commitBy - Date.now(), async (tx) => {
      const decided = await this.decideAndInsert(tx, payload, commitBy);
      if (decided.commit) await tx.commit();
      return decided;
    });
    // Not awaited: the invalidation is written to Redis now, on the connection BullMQ reports the
    // job's completion on (see worker.ts), and Redis runs one connection's commands in order, so
    // it is done before the completion event the gateway waits for exists. Awaiting its reply
    // would add a round trip before every answer.
    if (outcome.commit && outcome.created) void this.dropCachedMisses(outcome.created);
    return outcome.answer;
  }

  /**
   * After the commit (before, a redirect could cache the miss again). On failure the links still
   * exist: they resolve once the link host's negative entry expires (seconds), so it is logged.
   */
  private async dropCachedMisses(created: LinkRef[]): Promise<void> {
    if (!this.options.linkCache || created.length === 0) return;
    try {
      await this.options.linkCache.invalidate(created);
    } catch (error) {
      this.options.logger.error(
        { err: error, links: created.length },
        'could not invalidate the link cache for new links',
      );
    }
  }

  private async decideAndInsert(
    tx: CreationTransaction,
    payload: CreateLinksPayload,
    commitBy: number,
  ): Promise<TransactionOutcome> {
    const { requestId, appId, environment, entries, creationBudget, deadline } = payload;

    const claim = await tx.claim(requestId, appId, deadline);
    // Decided before (an earlier delivery's results, or abandoned): answer that, create nothing.
    if (claim.kind === 'answered') return { commit: false, answer: claim.answer };
    const { app } = claim;

    const callerAliases = new Set(entries.flatMap(({ draft }) => draft.alias ?? []));
    const taken = await this.links.takenAliases(tx, appId, environment, [...callerAliases]);
    const plan = planCreations(entries, taken, app, creationBudget);

    if (this.options.testDelayMs) await sleep(this.options.testDelayMs);

    const created = await this.createPlanned(tx, payload, plan, app, callerAliases, commitBy);
    if (!created) return abandoned('deadline_passed');
    const { result, refs } = created;
    this.options.logger.debug(
      {
        requestId,
        appId,
        entries: entries.length,
        created: refs.length,
        stoppedEarly: plan.stoppedEarly?.reason,
      },
      'creation job done',
    );
    return { commit: true, answer: { status: 'done', result }, created: refs };
  }

  /**
   * Inserts every planned link, then stores the job's results, whose links are toLink of the
   * rows the INSERT returned: the answer is what the database stored, read as every later GET
   * reads it. Caller aliases were checked under the app lock, so only generated aliases can
   * collide (with links made earlier): the insert skips those rows, and their entries are redrawn
   * and inserted again, a bounded number of times. Undefined when the deadline passed: the outcome
   * was not stored, and the transaction must roll back.
   */
  private async createPlanned(
    tx: CreationTransaction,
    payload: CreateLinksPayload,
    plan: CreationPlan,
    app: ClaimedApp,
    callerAliases: ReadonlySet<string>,
    commitBy: number,
  ): Promise<{ result: CreateLinksResult; refs: LinkRef[] } | undefined> {
    const inserted = new Map<number, StoredLink>();
    // Ids drawn once, in entry order, so a redrawn alias does not reorder the batch's ids.
    const ids = new Map(plan.toCreate.map(({ index }) => [index, newId('lnk')]));
    const usedAliases = new Set(callerAliases);
    const drawAliases = this.options.drawAliases ?? generateAliases;
    let pending = withAliases(plan.toCreate, usedAliases, drawAliases);

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
          id: ids.get(link.index) ?? newId('lnk'),
          app_id: payload.appId,
          environment: payload.environment,
          alias: link.alias,
        })),
      );
      const byAlias = new Map(rows.map((row) => [row.alias, row]));
      const collided: AliasedLink[] = [];
      for (const link of pending) {
        const row = byAlias.get(link.alias);
        if (row) inserted.set(link.index, row);
        else if (link.generated) collided.push(link);
        else throw new Error(`caller alias of entry ${link.index} collided after the check`);
      }
      pending =
        collided.length === 0
          ? []
          : withAliases(
              collided.map(({ index, draft }) => ({ index, draft })),
              usedAliases,
              drawAliases,
            );
    }

    const result = this.resultOf(plan, inserted, app);
    if (Date.now() >= commitBy) return undefined;
    const recorded = await tx.recordOutcome({
      requestId: payload.requestId,
      results: result,
      commitBy,
    });
    if (!recorded) return undefined;
    const refs = [...inserted.values()].map(({ environment, alias }) => ({
      subdomainKey: app.subdomainKey,
      environment,
      alias,
    }));
    return { result, refs };
  }

  /** The job's answer: the plan's refusals and the links created, in entry order. */
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

interface AliasedLink extends PlannedLink {
  alias: string;
  generated: boolean;
}

/** Gives each entry without a caller alias a fresh generated one not used in this job yet. */
function withAliases(
  planned: PlannedLink[],
  usedAliases: Set<string>,
  drawAliases: (count: number, avoid: ReadonlySet<string>) => string[],
): AliasedLink[] {
  const needed = planned.filter(({ draft }) => draft.alias === null).length;
  const generated = drawAliases(needed, usedAliases);
  for (const alias of generated) usedAliases.add(alias);
  return planned.map(({ index, draft }) => {
    if (draft.alias !== null) return { index, draft, alias: draft.alias, generated: false };
    const alias = generated.shift();
    if (alias === undefined) throw new Error('fewer generated aliases than entries needing one');
    return { index, draft, alias, generated: true };
  });
}
