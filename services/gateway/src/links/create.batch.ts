import type { CreateLinksResult, EntryResult, StoppedEarly } from '@linkservice/queue';

/** The most entries one POST /links/batch may carry. */
export const MAX_BATCH_ENTRIES = 100;

/** The batch response body, as the spec and decisions.md define it. */
export interface BatchReport {
  created: number;
  failed: number;
  notAttempted: number;
  results: EntryResult[];
  stoppedEarly?: StoppedEarly;
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
