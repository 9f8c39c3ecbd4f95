import { setTimeout as delay } from 'node:timers/promises';
import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import type { RequestKind, RequestRecord } from './load';
import { createdLinks } from './load';

/** The longest answer time each kind of request may take during a fault, in ms. */
export type Bounds = Record<RequestKind, number>;

/** The statuses a request of each kind may answer with, besides 503 `unavailable`. */
const SUCCESS: Record<RequestKind, readonly number[]> = {
  create: [201],
  batch: [201, 207],
  get: [200],
  list: [200],
  'redirect-cached': [302],
  'redirect-uncached': [302],
};

export interface AnswerAudit {
  /** Requests that broke a rule, one line each (kind, time, status, why). */
  violations: string[];
  worstMs: number;
  worstKind: RequestKind | null;
  /** Longest answer time per kind of request, in ms. */
  worstByKind: Partial<Record<RequestKind, number>>;
  requests: number;
  unavailable: number;
  /** No answer at all: refused, reset or given up at the cap. */
  unanswered: number;
}

export interface AnswerRules {
  bounds: Bounds;
  /**
   * Connection refused (the process is gone and its port closed) is an answer a load balancer
   * retries elsewhere: allowed for the kinds of a service the fault stops on purpose.
   */
  refusedAllowedFor?: readonly RequestKind[];
  /**
   * Also a connection cut mid-request (reset, hang-up): the answer of a process killed while it
   * served the request, which a client retries. For the kinds of a service the fault kills.
   */
  cutAllowedFor?: readonly RequestKind[];
}

/** How a request to a process that is killed, or gone, ends without an answer. */
const CUT_ERRORS = ['ECONNRESET', 'socket hang up', 'EPIPE'];

/** Every request answered within its bound, with an expected status; a 503 with Retry-After. */
export function auditAnswers(records: readonly RequestRecord[], rules: AnswerRules): AnswerAudit {
  const violations: string[] = [];
  let worstMs = 0;
  let worstKind: RequestKind | null = null;
  const worstByKind: Partial<Record<RequestKind, number>> = {};
  const origin = Math.min(...records.map((record) => record.startedAt));
  for (const record of records) {
    const what = `${record.kind} started at +${record.startedAt - origin} ms`;
    if (record.status === 0) {
      const refused = record.error === 'ECONNREFUSED';
      const cut = CUT_ERRORS.includes(record.error ?? '');
      const allowed = rules.cutAllowedFor?.includes(record.kind)
        ? refused || cut
        : refused && rules.refusedAllowedFor?.includes(record.kind);
      if (!allowed) {
        violations.push(`${what}: no answer after ${record.durationMs} ms (${record.error})`);
      }
      continue;
    }
    worstByKind[record.kind] = Math.max(worstByKind[record.kind] ?? 0, record.durationMs);
    if (record.durationMs > worstMs) {
      worstMs = record.durationMs;
      worstKind = record.kind;
    }
    const bound = rules.bounds[record.kind];
    if (record.durationMs > bound) {
      violations.push(`${what}: ${record.status} after ${record.durationMs} ms > ${bound} ms`);
    }
    if (record.status === 503) {
      if (record.retryAfter === null) violations.push(`${what}: 503 without Retry-After`);
    } else if (!SUCCESS[record.kind].includes(record.status)) {
      violations.push(`${what}: unexpected status ${record.status}`);
    }
  }
  return {
    violations,
    worstMs,
    worstKind,
    worstByKind,
    requests: records.length,
    unavailable: records.filter((r) => r.status === 503).length,
    unanswered: records.filter((r) => r.status === 0).length,
  };
}

export interface CreationAudit {
  /** Links an answer reported as created that the database does not hold. */
  lost: number;
  /** Aliases or markers held more than once. */
  duplicated: number;
  /** Entries of a 503 (or a refused batch entry) that exist anyway. */
  createdDespiteRefusal: number;
  /** Links nobody was told about: of requests that got no answer, found in the database. */
  createdUnanswered: number;
  /** Links of the app that no request sent. */
  unknown: number;
  details: string[];
}

/**
 * Compares every creation's answer with the database, by alias and by marker title: each link an
 * answer reports exists exactly once, nothing a refusal covers exists, no marker is held twice.
 */
export async function auditCreations(
  db: Kysely<Database>,
  appId: string,
  records: readonly RequestRecord[],
): Promise<CreationAudit> {
  const rows = await db
    .selectFrom('links')
    .select(['id', 'alias', 'title'])
    .where('app_id', '=', appId)
    .execute();
  const byMarker = new Map<string, number>();
  const byAlias = new Map<string, number>();
  for (const row of rows) {
    if (row.title !== null) byMarker.set(row.title, (byMarker.get(row.title) ?? 0) + 1);
    byAlias.set(row.alias, (byAlias.get(row.alias) ?? 0) + 1);
  }
  const audit: CreationAudit = {
    lost: 0,
    duplicated: 0,
    createdDespiteRefusal: 0,
    createdUnanswered: 0,
    unknown: 0,
    details: [],
  };
  const sentMarkers = new Set<string>();
  for (const record of records) {
    for (const entry of record.entries ?? []) {
      sentMarkers.add(entry.marker);
      const held = byMarker.get(entry.marker) ?? 0;
      if (held > 1) {
        audit.duplicated += held - 1;
        audit.details.push(`${entry.marker} held ${held} times (${record.kind} ${record.status})`);
      }
      const created = entryCreated(record, entry.marker);
      if (created === true && held === 0) {
        audit.lost += 1;
        audit.details.push(`${entry.marker} answered created (${record.status}) but not stored`);
      }
      if (created === false && held > 0) {
        audit.createdDespiteRefusal += 1;
        audit.details.push(`${entry.marker} answered ${record.status} but stored`);
      }
      if (created === null && held > 0) audit.createdUnanswered += 1;
    }
  }
  for (const [alias, held] of byAlias) {
    if (held > 1) {
      audit.duplicated += held - 1;
      audit.details.push(`alias ${alias} held ${held} times`);
    }
  }
  for (const row of rows) {
    if (row.title === null || !sentMarkers.has(row.title)) audit.unknown += 1;
  }
  if (audit.unknown > 0) audit.details.push(`${audit.unknown} links no request sent`);
  return audit;
}

/** Whether the answer says the entry with `marker` was created; null when there was no answer. */
function entryCreated(record: RequestRecord, marker: string): boolean | null {
  if (record.status === 0) return null;
  if (record.status !== 201 && record.status !== 207) return false;
  const index = record.entries?.findIndex((entry) => entry.marker === marker) ?? -1;
  if (record.kind === 'create') return createdLinks(record.body).length === 1;
  const results = (record.body as { results?: { index: number; ok: boolean }[] } | undefined)
    ?.results;
  return results?.some((result) => result.index === index && result.ok) ?? false;
}

export interface ClickAudit {
  /** Redirects answered 302 (each a person's GET: a click). */
  expected: number;
  counted: number;
  /** Clicks counted beyond 302 answers plus unanswered redirects (which may have counted). */
  overCounted: number;
  /** Clicks answered 302 but missing from click_count. */
  lost: number;
  details: string[];
}

/**
 * After recovery: waits until the flushers settle, then compares each link's click_count with the
 * redirects it got. Settled: the count reached the expected total and stopped moving for
 * `steadyMs` (matching, or over-counted), or the deadline passed (a batch of clicks whose flush failed is taken
 * over only after CLICK_RECOVERY_AFTER_MS, so short of the total the wait runs to `settleMs`).
 */
export async function auditClicks(
  db: Kysely<Database>,
  appId: string,
  redirects: readonly RequestRecord[],
  settleMs = 15_000,
  /** The suite's CLICK_RECOVERY_AFTER_MS (5 s) and two flush intervals. */
  steadyMs = 6_000,
): Promise<ClickAudit> {
  const answered = new Map<string, number>();
  const unanswered = new Map<string, number>();
  for (const record of redirects) {
    if (record.alias === undefined) continue;
    if (record.status === 302) answered.set(record.alias, (answered.get(record.alias) ?? 0) + 1);
    if (record.status === 0) unanswered.set(record.alias, (unanswered.get(record.alias) ?? 0) + 1);
  }
  const expected = [...answered.values()].reduce((sum, n) => sum + n, 0);

  const read = async () =>
    new Map(
      (
        await db
          .selectFrom('links')
          .leftJoin('link_clicks', 'link_clicks.link_id', 'links.id')
          .select(['links.alias', 'link_clicks.click_count'])
          .where('links.app_id', '=', appId)
          .execute()
      ).map((row) => [row.alias, row.click_count ?? 0]),
    );
  const deadline = Date.now() + settleMs;
  let counts = await read();
  let total = sum(counts);
  let stableSince = Date.now();
  // Even a total that matches must hold still: a late over-count (a held script run after a
  // thaw, a batch taken over after CLICK_RECOVERY_AFTER_MS) would land after the first match.
  const settled = () => total >= expected && Date.now() - stableSince >= steadyMs;
  while (Date.now() < deadline && !settled()) {
    await delay(250);
    counts = await read();
    const now = sum(counts);
    if (now !== total) stableSince = Date.now();
    total = now;
  }

  const audit: ClickAudit = { expected, counted: total, overCounted: 0, lost: 0, details: [] };
  for (const [alias, count] of counts) {
    const ok = answered.get(alias) ?? 0;
    const mayHave = ok + (unanswered.get(alias) ?? 0);
    if (count > mayHave) {
      audit.overCounted += count - mayHave;
      audit.details.push(`${alias}: ${count} clicks counted for ${ok} redirects`);
    }
    if (count < ok) audit.lost += ok - count;
  }
  return audit;
}

function sum(counts: Map<string, number>): number {
  let total = 0;
  for (const value of counts.values()) total += value;
  return total;
}
