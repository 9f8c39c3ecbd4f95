import { setTimeout as sleep } from 'node:timers/promises';
import type { StoredLink } from '@linkservice/contracts';
import { toLink } from '@linkservice/contracts';
import type { NewLink } from '@linkservice/db';
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
  OutcomeRecord,
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
 * order, insert all new links and record the outcome in one statement, COMMIT, all in a single
 * transaction. A crash before COMMIT leaves nothing; a redelivery after COMMIT returns the stored
 * results. Expected refusals are values in the results; anything unexpected throws (and rolls
 * back) so BullMQ can retry while the deadline allows. The protocol's steps are
 * @linkservice/creation's (see its README); this service decides and writes the links.
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

    const claim = await tx.claim(
      requestId,
      appId,
      deadline,
      entries.map(({ draft }) => draft.deepLinkData),
    );
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
   * Inserts every planned link and stores the job's results in one statement. The results are
   * written before the insert answers (the rows' timestamps are the transaction's now(), read
   * with the app lock), so one round trip does both. Caller aliases were checked under the app
   * lock, so only generated aliases can collide (with links made earlier): then the statement
   * inserts the others but stores nothing, and the colliding entries are redrawn and inserted
   * with the corrected results, a bounded number of times. Undefined when the deadline passed.
   */
  private async createPlanned(
    tx: CreationTransaction,
    payload: CreateLinksPayload,
    plan: CreationPlan,
    app: ClaimedApp,
    callerAliases: ReadonlySet<string>,
    commitBy: number,
  ): Promise<{ result: CreateLinksResult; refs: LinkRef[] } | undefined> {
    const outcome = (results: CreateLinksResult): OutcomeRecord => ({
      requestId: payload.requestId,
      results,
      commitBy,
    });
    const inserted = new Map<number, StoredLink>();
    const refsOf = (): LinkRef[] =>
      [...inserted.values()].map(({ environment, alias }) => ({
        subdomainKey: app.subdomainKey,
        environment,
        alias,
      }));
    // Ids drawn once, in entry order, so a redrawn alias does not reorder the batch's ids.
    const ids = new Map(plan.toCreate.map(({ index }) => [index, newId('lnk')]));
    const storedData = new Map(
      payload.entries.map(({ index }, i) => [index, app.storedDeepLinkData[i] ?? null]),
    );
    const usedAliases = new Set(callerAliases);
    const drawAliases = this.options.drawAliases ?? generateAliases;
    let pending = withAliases(plan.toCreate, usedAliases, drawAliases);

    // Both clocks must agree there is still time; the statements check the database's.
    if (pending.length === 0) {
      const result = this.resultOf(plan, inserted, app);
      if (Date.now() >= commitBy || !(await tx.recordOutcome(outcome(result)))) return undefined;
      return { result, refs: [] };
    }
    for (let round = 1; ; round++) {
      if (round > MAX_ALIAS_ROUNDS) {
        throw new Error(`no free generated alias after ${MAX_ALIAS_ROUNDS} rounds`);
      }
      const attempt = pending.map((link) => ({
        link,
        row: storedLink(payload, link, {
          id: ids.get(link.index) ?? newId('lnk'),
          deepLinkData: storedData.get(link.index) ?? null,
          now: app.now,
        }),
      }));
      // The answer if every row of this attempt goes in; stored only then.
      const result = this.resultOf(
        plan,
        new Map([...inserted, ...attempt.map(({ link, row }) => [link.index, row] as const)]),
        app,
      );
      if (Date.now() >= commitBy) return undefined;
      const { inserted: aliases, recorded } = await this.links.insertLinksRecording(
        tx,
        attempt.map(({ row }) => newLinkRow(row)),
        outcome(result),
      );

      const collided: AliasedLink[] = [];
      for (const { link, row } of attempt) {
        if (aliases.has(link.alias)) inserted.set(link.index, row);
        else if (link.generated) collided.push(link);
        else throw new Error(`caller alias of entry ${link.index} collided after the check`);
      }
      if (collided.length === 0) return recorded ? { result, refs: refsOf() } : undefined;
      pending = withAliases(
        collided.map(({ index, draft }) => ({ index, draft })),
        usedAliases,
        drawAliases,
      );
    }
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

/**
 * The row as the insert stores it: what the INSERT sends, the database's defaults, and the
 * deepLinkData as jsonb returns it (from the claim).
 */
function storedLink(
  payload: CreateLinksPayload,
  link: AliasedLink,
  stored: { id: string; deepLinkData: Record<string, unknown> | null; now: Date },
): StoredLink {
  const { draft } = link;
  const { id, deepLinkData, now } = stored;
  return {
    id,
    app_id: payload.appId,
    environment: payload.environment,
    alias: link.alias,
    web_fallback_url: draft.webFallbackUrl,
    ios_fallback_url: draft.iosFallbackUrl,
    deep_link_data: deepLinkData,
    title: draft.title,
    campaign: draft.campaign,
    channel: draft.channel,
    feature: draft.feature,
    tags: draft.tags,
    expires_at: draft.expiresAt === null ? null : new Date(draft.expiresAt),
    archived_at: null,
    click_count: 0,
    created_at: now,
    updated_at: now,
  };
}

/** What the INSERT sends of a stored link; the rest are the column defaults. */
function newLinkRow(link: StoredLink): NewLink {
  return {
    id: link.id,
    app_id: link.app_id,
    environment: link.environment,
    alias: link.alias,
    web_fallback_url: link.web_fallback_url,
    ios_fallback_url: link.ios_fallback_url,
    deep_link_data: link.deep_link_data === null ? null : JSON.stringify(link.deep_link_data),
    title: link.title,
    campaign: link.campaign,
    channel: link.channel,
    feature: link.feature,
    tags: link.tags,
    expires_at: link.expires_at,
  };
}
