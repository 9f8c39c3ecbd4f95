import type { LinkServiceError, RateLimitInfo } from './errors';
import type { BatchEntryResult, BatchReport } from './types';

/** The most entries one `POST /links/batch` takes. */
export const MAX_BATCH_ENTRIES = 100;

/** Consecutive slices of at most `size` entries, in order. */
export function splitIntoChunks<T>(entries: readonly T[], size = MAX_BATCH_ENTRIES): T[][] {
  if (!Number.isInteger(size) || size < 1 || size > MAX_BATCH_ENTRIES) {
    throw new RangeError(`chunkSize must be an integer from 1 to ${MAX_BATCH_ENTRIES}`);
  }
  const chunks: T[][] = [];
  for (let start = 0; start < entries.length; start += size) {
    chunks.push(entries.slice(start, start + size));
  }
  return chunks;
}

/**
 * The Idempotency-Key of chunk `chunkIndex` when the caller gave one for the whole run: the same
 * run repeated with the same key sends each chunk under the key it had the first time, so chunks
 * already created are replayed, not created again.
 */
export function chunkIdempotencyKey(key: string, chunkIndex: number): string {
  return `${key}:${chunkIndex}`;
}

/** One request of a run of `createLinksInBatches`, as the gateway answered it. */
export interface BatchChunk {
  /** Position of the chunk's first entry in the whole input. */
  offset: number;
  /** Entries in the chunk. */
  size: number;
  status: 201 | 207;
  requestId: string | undefined;
  replayed: boolean;
  rateLimit: RateLimitInfo | undefined;
}

/** A chunk the gateway did not report on: it failed as a whole (nothing of it was created). */
export interface BatchInterruption {
  /** Position of the failed chunk's first entry in the whole input. */
  atIndex: number;
  error: LinkServiceError;
}

/**
 * One report over every chunk of a `createLinksInBatches` run, with indexes (`results[].index`,
 * `stoppedEarly.atIndex`) relative to the whole input. `created + failed + notAttempted` is the
 * number of entries: entries of chunks never sent, or of a chunk that failed as a whole, count as
 * `notAttempted`.
 */
export interface MergedBatchReport extends BatchReport {
  /** Every request sent, in order. */
  chunks: BatchChunk[];
  /**
   * Set when a chunk failed as a whole (e.g. `unavailable` after the retries, `timeout`): no
   * later chunk was sent. Links of earlier chunks stay created.
   */
  interrupted?: BatchInterruption;
  /** With `stoppedEarly.reason` `rate_limited`: seconds until the creation limit resets. */
  retryAfter?: number;
}

/** A chunk's report put in terms of the whole input. */
export function shiftReport(report: BatchReport, offset: number): BatchReport {
  const shifted: BatchReport = {
    created: report.created,
    failed: report.failed,
    notAttempted: report.notAttempted,
    results: report.results.map((result): BatchEntryResult => ({
      ...result,
      index: result.index + offset,
    })),
  };
  if (report.stoppedEarly) {
    shifted.stoppedEarly = {
      ...report.stoppedEarly,
      atIndex: report.stoppedEarly.atIndex + offset,
    };
  }
  return shifted;
}

/**
 * The merged report of `totalEntries` entries, of which the chunks in `reports` (already shifted,
 * in input order) were reported on; every entry of no report is not attempted.
 */
export function mergeReports(
  totalEntries: number,
  reports: readonly { size: number; report: BatchReport }[],
): BatchReport {
  const merged: BatchReport = { created: 0, failed: 0, notAttempted: 0, results: [] };
  let reportedEntries = 0;
  for (const { size, report } of reports) {
    reportedEntries += size;
    merged.created += report.created;
    merged.failed += report.failed;
    merged.notAttempted += report.notAttempted;
    merged.results.push(...report.results);
    // Only the last report can carry one: a stopped chunk sends no later chunk.
    if (report.stoppedEarly) merged.stoppedEarly = report.stoppedEarly;
  }
  merged.notAttempted += totalEntries - reportedEntries;
  return merged;
}
