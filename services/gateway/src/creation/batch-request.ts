import type { FieldErrors } from '@linkservice/contracts';
import { parseLinkCreate } from '@linkservice/contracts';
import type {
  CreateLinksPayload,
  CreateLinksResult,
  EntryResult,
  StoppedEarly,
} from '@linkservice/creation';
import { ALIAS_REPEATED, entryInvalid } from '@linkservice/creation';

/** The most entries one POST /links/batch may carry. */
export const MAX_BATCH_ENTRIES = 100;

function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The batch response body, as the spec and decisions.md define it. */
export interface BatchReport {
  created: number;
  failed: number;
  notAttempted: number;
  results: EntryResult[];
  stoppedEarly?: StoppedEarly;
}

export interface CheckedEntries {
  /** What the worker gets: the entries that passed, with their position in the request. */
  valid: CreateLinksPayload['entries'];
  /** The entries refused here, each a validation_failed. */
  failures: EntryResult[];
}

/**
 * Validates each entry of a batch at the one instant `now`. An entry whose `alias` is the same
 * string as an earlier entry's fails on alias, even when that earlier entry failed on another
 * field: only valid entries reach the worker, so its own repeat check never sees that earlier
 * alias. An entry whose alias is wrong in itself (format, reserved) keeps that message, which
 * is what the caller has to fix first.
 */
export function checkBatchEntries(
  entries: readonly Record<string, unknown>[],
  now: Date,
): CheckedEntries {
  const valid: CheckedEntries['valid'] = [];
  const failures: EntryResult[] = [];
  const aliasesOfEarlierEntries = new Set<string>();

  entries.forEach((entry, index) => {
    const parsed = parseLinkCreate(entry, now);
    const alias = entry.alias;
    const repeated = typeof alias === 'string' && aliasesOfEarlierEntries.has(alias);
    if (typeof alias === 'string') aliasesOfEarlierEntries.add(alias);

    if (parsed.ok && !repeated) {
      valid.push({ index, draft: parsed.draft });
      return;
    }
    const fieldErrors: FieldErrors = parsed.ok ? {} : { ...parsed.fieldErrors };
    if (repeated && !Object.hasOwn(fieldErrors, 'alias')) fieldErrors.alias = ALIAS_REPEATED;
    failures.push(entryInvalid(index, fieldErrors));
  });
  return { valid, failures };
}

/**
 * Joins the gateway's validation failures with what the worker did. Entries are decided in
 * order, so when the worker stopped at `atIndex` every later entry was never tried, including
 * those the gateway had already found invalid: they are counted in notAttempted, not listed.
 */
export function mergeBatchResults(
  entryCount: number,
  gatewayFailures: readonly EntryResult[],
  worker: CreateLinksResult | undefined,
): BatchReport {
  const stoppedEarly = worker?.stoppedEarly;
  const tried = stoppedEarly
    ? gatewayFailures.filter((failure) => failure.index < stoppedEarly.atIndex)
    : [...gatewayFailures];
  const results = [...tried, ...(worker?.results ?? [])].sort((a, b) => a.index - b.index);
  const created = results.filter((entry) => entry.ok).length;
  const failed = results.length - created;
  const report: BatchReport = {
    created,
    failed,
    notAttempted: entryCount - created - failed,
    results,
  };
  if (stoppedEarly) report.stoppedEarly = stoppedEarly;
  return report;
}

type BatchRequest =
  { ok: true; entries: Record<string, unknown>[] } | { ok: false; fieldErrors: FieldErrors };

const LINKS_SHAPE = `must be an array of 1 to ${MAX_BATCH_ENTRIES} link objects`;

/**
 * The request-level rules of POST /links/batch. Any failure here rejects the whole request and
 * creates nothing; a bad field inside an entry is that entry's own validation_failed instead.
 */
export function checkBatchRequest(body: Record<string, unknown>): BatchRequest {
  // A Map copied with Object.fromEntries, as in parseLinkCreate: assigned into `{}`, a member
  // named `__proto__` would vanish and the request pass instead of naming it in the 422.
  const errors = new Map<string, string>();
  for (const field of Object.keys(body)) {
    if (field !== 'links') errors.set(field, 'is not a field of a batch request');
  }
  const links = body.links;
  if (links === undefined) errors.set('links', `is required and ${LINKS_SHAPE}`);
  else if (!Array.isArray(links)) errors.set('links', LINKS_SHAPE);
  else if (links.length === 0) errors.set('links', `${LINKS_SHAPE}; it is empty`);
  else if (links.length > MAX_BATCH_ENTRIES) {
    errors.set('links', `${LINKS_SHAPE}; it has ${links.length}`);
  } else {
    const notObjects = links.flatMap((entry: unknown, index) =>
      isJsonObject(entry) ? [] : [index],
    );
    if (notObjects.length > 0) {
      errors.set('links', `${LINKS_SHAPE}; not an object at index ${notObjects.join(', ')}`);
    }
  }
  if (errors.size > 0 || !Array.isArray(links)) {
    return { ok: false, fieldErrors: Object.fromEntries(errors) };
  }
  return { ok: true, entries: links as Record<string, unknown>[] };
}
