import type { LinkDraft } from '@linkservice/contracts';
import { isReservedAlias } from '@linkservice/contracts';
import type { Environment } from '@linkservice/db';
import type {
  ClaimedApp,
  CreateLinksPayload,
  EntryResult,
  StoppedEarly,
} from '@linkservice/creation';
import { ALIAS_REPEATED, entryInvalid } from '@linkservice/creation';

export const ALIAS_IN_USE =
  'is already in use in this app and environment (archived links included)';
export const ALIAS_RESERVED = 'is a reserved word; choose another alias';
export const PLAN_LIMIT_MESSAGE =
  "The app has reached its plan's link allowance; no more links can be created.";
export const RATE_LIMIT_MESSAGE =
  'The link creation limit is reached; try again when the limit window resets.';

/** What the plan needs to know about the app, read under the app's row lock. */
export interface AppCapacity {
  /** Links of the app in both environments, archived ones included. */
  linkCount: number;
  /** null: unlimited. */
  linkAllowance: number | null;
}

export interface PlannedLink {
  index: number;
  draft: LinkDraft;
}

export interface CreationPlan {
  /** Entries that will be created, in order; `draft.alias: null` still needs a generated alias. */
  toCreate: PlannedLink[];
  /** Entries tried and refused, including the one that stopped the batch. */
  refused: EntryResult[];
  stoppedEarly?: StoppedEarly;
}

/**
 * Walks the entries in order, as the batch contract says: a caller alias already taken (archived
 * included) or repeated from an earlier entry fails that entry alone; an entry that would be
 * created past the plan allowance or past the gateway's creation budget is refused and stops the
 * batch, leaving every later entry untried. Pure: the caller supplies what the database said.
 */
export function planCreations(
  entries: CreateLinksPayload['entries'],
  takenAliases: Pick<ReadonlySet<string>, 'has'>,
  capacity: AppCapacity,
  creationBudget: number,
): CreationPlan {
  const toCreate: PlannedLink[] = [];
  const refused: EntryResult[] = [];
  const aliasesOfEarlierEntries = new Set<string>();

  for (const { index, draft } of entries) {
    const alias = draft.alias;
    if (alias !== null) {
      const problem = aliasesOfEarlierEntries.has(alias)
        ? ALIAS_REPEATED
        : takenAliases.has(alias)
          ? ALIAS_IN_USE
          : // The gateway refuses these already; the worker is the last line before the insert.
            isReservedAlias(alias)
            ? ALIAS_RESERVED
            : undefined;
      aliasesOfEarlierEntries.add(alias);
      if (problem !== undefined) {
        refused.push(entryInvalid(index, { alias: problem }));
        continue;
      }
    }

    const { linkCount, linkAllowance } = capacity;
    if (linkAllowance !== null && linkCount + toCreate.length >= linkAllowance) {
      return stop(toCreate, refused, index, 'plan_limit_reached', PLAN_LIMIT_MESSAGE);
    }
    if (toCreate.length >= creationBudget) {
      return stop(toCreate, refused, index, 'rate_limited', RATE_LIMIT_MESSAGE);
    }
    toCreate.push({ index, draft });
  }
  return { toCreate, refused };
}

function stop(
  toCreate: PlannedLink[],
  refused: EntryResult[],
  index: number,
  reason: StoppedEarly['reason'],
  message: string,
): CreationPlan {
  refused.push({ index, ok: false, error: reason, message });
  return { toCreate, refused, stoppedEarly: { reason, atIndex: index, message } };
}

/** An alias in one app and environment. */
export interface AliasRef {
  appId: string;
  environment: Environment;
  alias: string;
}

/** One string per alias, app and environment, for sets and maps. */
export function aliasKey({ appId, environment, alias }: AliasRef): string {
  return `${appId}\u0000${environment}\u0000${alias}`;
}

/** A request this transaction claimed, and its app as the claim read it under the lock. */
export interface ClaimedRequest {
  payload: CreateLinksPayload;
  app: ClaimedApp;
}

export interface PlannedRequest extends ClaimedRequest {
  plan: CreationPlan;
}

/** The caller aliases the claimed requests ask for: the ones whose use must be read first. */
export function callerAliasesOf(claimed: readonly ClaimedRequest[]): AliasRef[] {
  return claimed.flatMap(({ payload: { appId, environment, entries } }) =>
    entries.flatMap(({ draft }) =>
      draft.alias === null ? [] : [{ appId, environment, alias: draft.alias }],
    ),
  );
}

/**
 * Plans a group's claimed requests in arrival order, each against what the ones before it will
 * have created: an app's link count grows by its earlier requests' links (the plan allowance
 * stays exact), and an alias an earlier request takes is taken for the later ones. The plans are
 * those of one transaction per request, one after the other. `taken` holds the aliasKey()s the
 * database already has; it is not changed.
 */
export function planGroup(
  claimed: readonly ClaimedRequest[],
  taken: ReadonlySet<string>,
): PlannedRequest[] {
  const takenSoFar = new Set(taken);
  const linkCounts = new Map<string, number>();
  return claimed.map(({ payload, app }) => {
    const linkCount = linkCounts.get(payload.appId) ?? app.linkCount;
    const scope = { appId: payload.appId, environment: payload.environment };
    const plan = planCreations(
      payload.entries,
      { has: (alias) => takenSoFar.has(aliasKey({ ...scope, alias })) },
      { linkCount, linkAllowance: app.linkAllowance },
      payload.creationBudget,
    );
    linkCounts.set(payload.appId, linkCount + plan.toCreate.length);
    for (const { draft } of plan.toCreate) {
      if (draft.alias !== null) takenSoFar.add(aliasKey({ ...scope, alias: draft.alias }));
    }
    return { payload, app, plan };
  });
}
