import type { StoredLink } from '@linkservice/contracts';
import { insertColumnsOf, toLink } from '@linkservice/contracts';
import type { NewLink } from '@linkservice/db';
import { newId } from '@linkservice/db';
import type { CreateLinksResult, EntryResult } from '@linkservice/creation';
import type { LinkRef } from '@linkservice/link-cache';
import type { PlannedLink, PlannedRequest } from './creation-plan';
import { aliasKey } from './creation-plan';

/** Draws `count` generated aliases, none of them in `avoid`. */
export type DrawAliases = (count: number, avoid: ReadonlySet<string>) => string[];

/** A link about to be inserted: its request, entry, alias, and the plan's entry it came from. */
interface PendingLink extends PlannedLink {
  request: PlannedRequest;
  alias: string;
  generated: boolean;
  /** The plan's entry, which keeps its id through redraws. */
  planned: PlannedLink;
}

/**
 * The rows of a group's links, insert round after insert round. Pure: the caller runs each
 * round's INSERT (which skips rows whose alias is taken) and hands back the rows it returned.
 * Caller aliases were checked under the apps' locks, so only generated aliases can collide
 * (with links made earlier): their entries are redrawn for the next round. Ids are drawn once,
 * in entry order, so a redrawn alias does not reorder a batch's ids.
 */
export class GroupInserts {
  /** What the database stored, per request, by entry index. */
  readonly stored = new Map<PlannedRequest, Map<number, StoredLink>>();
  private readonly ids = new Map<PlannedLink, string>();
  private readonly usedAliases = new Set<string>();
  private pending: PendingLink[];

  constructor(
    planned: readonly PlannedRequest[],
    private readonly drawAliases: DrawAliases,
  ) {
    for (const request of planned) {
      this.stored.set(request, new Map());
      for (const link of request.plan.toCreate) {
        this.ids.set(link, newId('lnk'));
        if (link.draft.alias !== null) this.usedAliases.add(link.draft.alias);
      }
    }
    this.pending = planned.flatMap((request) => this.withAliases(request, request.plan.toCreate));
  }

  /** Whether every planned link is stored. */
  get done(): boolean {
    return this.pending.length === 0;
  }

  /** The rows of the next round's INSERT. */
  rows(): NewLink[] {
    return this.pending.map((link) => ({
      ...insertColumnsOf(link.draft),
      id: this.ids.get(link.planned) ?? newId('lnk'),
      app_id: link.request.payload.appId,
      environment: link.request.payload.environment,
      alias: link.alias,
    }));
  }

  /**
   * The trace context of each row of rows(), in its order: the HTTP request the link came
   * from (its job's traceparent), '' without one; the link's link.created event carries it.
   */
  traceparents(): string[] {
    return this.pending.map((link) => link.request.payload.traceparent ?? '');
  }

  /** Takes a round's returned rows; the links left out are redrawn for the next round. */
  accept(returned: readonly StoredLink[]): void {
    const byAlias = new Map(
      returned.map((row) => [
        aliasKey({ appId: row.app_id, environment: row.environment, alias: row.alias }),
        row,
      ]),
    );
    const collided: PendingLink[] = [];
    for (const link of this.pending) {
      const { appId, environment } = link.request.payload;
      const row = byAlias.get(aliasKey({ appId, environment, alias: link.alias }));
      if (row) this.stored.get(link.request)?.set(link.index, row);
      else if (link.generated) collided.push(link);
      else throw new Error(`caller alias of entry ${link.index} collided after the check`);
    }
    this.pending = collided.flatMap((link) => this.withAliases(link.request, [link.planned]));
  }

  /** Gives each entry without a caller alias a fresh generated one not used in this group yet. */
  private withAliases(request: PlannedRequest, planned: readonly PlannedLink[]): PendingLink[] {
    const needed = planned.filter(({ draft }) => draft.alias === null).length;
    const generated = this.drawAliases(needed, this.usedAliases);
    for (const alias of generated) this.usedAliases.add(alias);
    return planned.map((link) => {
      const { index, draft } = link;
      if (draft.alias !== null) {
        return { request, index, draft, alias: draft.alias, generated: false, planned: link };
      }
      const alias = generated.shift();
      if (alias === undefined) throw new Error('fewer generated aliases than entries needing one');
      return { request, index, draft, alias, generated: true, planned: link };
    });
  }
}

/**
 * Each request's answer: its plan's refusals and the links stored, in entry order. The links are
 * toLink of the returned rows: the answer is what the database stored, as every later GET reads it.
 */
export function outcomesOf(
  stored: ReadonlyMap<PlannedRequest, ReadonlyMap<number, StoredLink>>,
  linkDomain: string,
): Map<string, CreateLinksResult> {
  const outcomes = new Map<string, CreateLinksResult>();
  for (const [{ payload, app, plan }, rows] of stored) {
    const context = { subdomainKey: app.subdomainKey, linkDomain };
    const created: EntryResult[] = [...rows].map(([index, row]) => ({
      index,
      ok: true,
      link: toLink(row, context),
    }));
    outcomes.set(payload.requestId, {
      results: [...plan.refused, ...created].sort((a, b) => a.index - b.index),
      ...(plan.stoppedEarly ? { stoppedEarly: plan.stoppedEarly } : {}),
    });
  }
  return outcomes;
}

/**
 * The stored links under caller aliases, whose "no such link" entries the link host's cache may
 * hold. Not the generated ones: eight random base62 characters drawn just now, which nobody can
 * have asked the link host for except by guessing one in 2 * 10^14 within the negative entry's
 * few seconds, so a creation skips the Redis call for them (most creations).
 */
export function callerAliasedOf(
  stored: ReadonlyMap<PlannedRequest, ReadonlyMap<number, StoredLink>>,
): LinkRef[] {
  return [...stored].flatMap(([{ app, plan }, rows]) =>
    plan.toCreate.flatMap(({ index, draft }) => {
      const row = rows.get(index);
      if (draft.alias === null || !row) return [];
      return [{ subdomainKey: app.subdomainKey, environment: row.environment, alias: row.alias }];
    }),
  );
}
