import { setTimeout as sleep } from 'node:timers/promises';
import { toLink } from '@linkservice/contracts';
import type { LinkRow, NewLink } from '@linkservice/db';
import { newId } from '@linkservice/db';
import type { LinkCache, LinkRef } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type {
  CreateLinksJobResult,
  CreateLinksPayload,
  CreateLinksResult,
  EntryResult,
} from '@linkservice/queue';
import { COMMIT_GRACE_MS, createLinksResultSchema } from '@linkservice/queue';
import type { PlannedLink } from './creation-plan';
import { planCreations } from './creation-plan';
import { generateAliases } from './generated-alias';
import type { CreationTransaction, LinksRepository } from './links.repository';

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
 * order, insert all new links in one statement, record the outcome, COMMIT, all in a single
 * transaction. A crash before COMMIT leaves nothing; a redelivery after COMMIT returns the stored
 * results. Expected refusals are values in the results; anything unexpected throws (and rolls
 * back) so BullMQ can retry while the deadline allows.
 */
export class LinkCreationService {
  constructor(
    private readonly repository: LinksRepository,
    private readonly options: LinkCreationOptions,
  ) {}

  async createLinks(payload: CreateLinksPayload): Promise<CreateLinksJobResult> {
    // The gateway has stopped waiting: creating now could only leave an outcome nobody reports.
    if (Date.now() >= payload.deadline) return abandoned('deadline_passed').answer;
    const commitBy = payload.deadline + COMMIT_GRACE_MS;
    const outcome = await this.repository.transaction(commitBy - Date.now(), async (tx) => {
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

    const app = await tx.claimAndLockApp(requestId, appId, deadline);
    if (!app) {
      const existing = await tx.findRequest(requestId);
      if (existing === undefined) return abandoned('deadline_passed');
      if (existing.status === 'abandoned') return abandoned('abandoned_by_gateway');
      // Committed by an earlier delivery of this job: answer exactly what it answered.
      const stored = createLinksResultSchema.parse(existing.results);
      return { commit: false, answer: { status: 'done', result: stored } };
    }

    const callerAliases = new Set(entries.flatMap(({ draft }) => draft.alias ?? []));
    const taken = await tx.takenAliases(appId, environment, [...callerAliases]);
    const plan = planCreations(entries, taken, app, creationBudget);

    if (this.options.testDelayMs) await sleep(this.options.testDelayMs);

    const rows = await this.insertAll(tx, payload, plan.toCreate, callerAliases);
    const created: EntryResult[] = plan.toCreate.map(({ index }) => {
      const row = rows.get(index);
      if (!row) throw new Error(`entry ${index} of ${requestId} was planned but not inserted`);
      const link = toLink(row, {
        subdomainKey: app.subdomainKey,
        linkDomain: this.options.linkDomain,
      });
      return { index, ok: true, link };
    });
    const result: CreateLinksResult = {
      results: [...plan.refused, ...created].sort((a, b) => a.index - b.index),
      ...(plan.stoppedEarly ? { stoppedEarly: plan.stoppedEarly } : {}),
    };

    // Both clocks must agree there is still time; the statement checks the database's.
    if (Date.now() >= commitBy) return abandoned('deadline_passed');
    if (!(await tx.recordOutcome(requestId, appId, created.length, result, commitBy))) {
      return abandoned('deadline_passed');
    }
    this.options.logger.debug(
      {
        requestId,
        appId,
        entries: entries.length,
        created: created.length,
        stoppedEarly: plan.stoppedEarly?.reason,
      },
      'creation job done',
    );
    return {
      commit: true,
      answer: { status: 'done', result },
      created: [...rows.values()].map((row) => ({
        subdomainKey: app.subdomainKey,
        environment: row.environment,
        alias: row.alias,
      })),
    };
  }

  /**
   * Inserts every planned link in one statement. Caller aliases were checked under the app lock,
   * so only generated aliases can collide (with links made earlier); those few are redrawn and
   * inserted again, a bounded number of times.
   */
  private async insertAll(
    tx: CreationTransaction,
    payload: CreateLinksPayload,
    planned: PlannedLink[],
    callerAliases: ReadonlySet<string>,
  ): Promise<Map<number, LinkRow>> {
    const inserted = new Map<number, LinkRow>();
    // Ids drawn once, in entry order, so a redrawn alias does not reorder the batch's ids.
    const ids = new Map(planned.map(({ index }) => [index, newId('lnk')]));
    const usedAliases = new Set(callerAliases);
    let pending = withAliases(planned, usedAliases);

    for (let round = 1; pending.length > 0; round++) {
      if (round > MAX_ALIAS_ROUNDS) {
        throw new Error(`no free generated alias after ${MAX_ALIAS_ROUNDS} rounds`);
      }
      const rows = await tx.insertLinks(
        pending.map((link) => newLinkRow(payload, link, ids.get(link.index) ?? newId('lnk'))),
      );
      const byAlias = new Map(rows.map((row) => [row.alias, row]));
      const collided: AliasedLink[] = [];
      for (const link of pending) {
        const row = byAlias.get(link.alias);
        if (row) inserted.set(link.index, row);
        else if (link.generated) collided.push(link);
        else throw new Error(`caller alias of entry ${link.index} collided after the check`);
      }
      pending = withAliases(
        collided.map(({ index, draft }) => ({ index, draft })),
        usedAliases,
      );
    }
    return inserted;
  }
}

interface AliasedLink extends PlannedLink {
  alias: string;
  generated: boolean;
}

/** Gives each entry without a caller alias a fresh generated one not used in this job yet. */
function withAliases(planned: PlannedLink[], usedAliases: Set<string>): AliasedLink[] {
  const needed = planned.filter(({ draft }) => draft.alias === null).length;
  const generated = generateAliases(needed, usedAliases);
  for (const alias of generated) usedAliases.add(alias);
  return planned.map(({ index, draft }) => {
    if (draft.alias !== null) return { index, draft, alias: draft.alias, generated: false };
    const alias = generated.shift();
    if (alias === undefined) throw new Error('fewer generated aliases than entries needing one');
    return { index, draft, alias, generated: true };
  });
}

function newLinkRow(payload: CreateLinksPayload, link: AliasedLink, id: string): NewLink {
  const { draft } = link;
  return {
    id,
    app_id: payload.appId,
    environment: payload.environment,
    alias: link.alias,
    web_fallback_url: draft.webFallbackUrl,
    ios_fallback_url: draft.iosFallbackUrl,
    deep_link_data: draft.deepLinkData === null ? null : JSON.stringify(draft.deepLinkData),
    title: draft.title,
    campaign: draft.campaign,
    channel: draft.channel,
    feature: draft.feature,
    tags: draft.tags,
    expires_at: draft.expiresAt,
  };
}
