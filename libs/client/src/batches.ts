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
 * The Idempotency-Key of chunk `chunkIndex` of a run under `key` (the caller's or one the client
 * made): the same run repeated with the same key sends each chunk under the key it had the first
 * time, so chunks already created are replayed, not created again.
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
  /** The key the chunk was sent under (`<run key>:<n>`); undefined when sent without one. */
  idempotencyKey: string | undefined;
  requestId: string | undefined;
  replayed: boolean;
  rateLimit: RateLimitInfo | undefined;
}

/** A chunk that failed as a whole: the gateway gave no report of its entries. */
export interface BatchInterruption {
  /** Position of the failed chunk's first entry in the whole input. */
  atIndex: number;
  /** Entries in the failed chunk. */
  size: number;
  error: LinkServiceError;
  /**
   * True when the chunk may have created some or all of its links (`isCreateOutcomeUnknown`:
   * no answer, a timeout, a proxy's page, 409 still running, 503, 500): its entries count in
   * `unknown`. False when the answer says nothing of it was created (e.g. 429, 422): its entries
   * count in `notAttempted`. Either way no later chunk was sent.
   */
  outcomeUnknown: boolean;
  /**
   * The key the chunk was sent under: sending the same entries under it again (or re-running
   * the whole import with the report's `idempotencyKey`) replays what it created instead of
   * creating it twice. Undefined when the client could make no key (then a re-run may create
   * the chunk's links twice).
   */
  idempotencyKey: string | undefined;
}

/**
 * One report over every chunk of a `createLinksInBatches` run, with indexes (`results[].index`,
 * `stoppedEarly.atIndex`, `interrupted.atIndex`) relative to the whole input.
 * `created + failed + notAttempted + unknown` is the number of entries.
 */
export interface MergedBatchReport extends BatchReport {
  /**
   * Entries of a chunk that failed with an unknown outcome (`interrupted.outcomeUnknown`): some
   * or all of them may have been created. 0 otherwise. Entries of chunks never sent, or of a
   * chunk the gateway refused as a whole, count in `notAttempted`.
   */
  unknown: number;
  /**
   * The run key: chunk n was sent under `<idempotencyKey>:<n>`. Yours, or one the client made
   * when you gave none. Running the same entries again (same chunk size) with
   * `{ idempotencyKey: report.idempotencyKey }` replays the chunks already done, an interrupted
   * one included, and sends the rest. Undefined when the client could make no key.
   */
  idempotencyKey: string | undefined;
  /** Every request answered with a report, in order (not the interrupted one). */
  chunks: BatchChunk[];
  /**
   * Set when a chunk failed as a whole (e.g. `unavailable` after the retries, `timeout`): no
   * later chunk was sent, and links of earlier chunks stay created. Whether the failed chunk
   * created anything is `interrupted.outcomeUnknown`.
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
 * The merged counts and results of `totalEntries` entries, of which the chunks in `reports`
 * (already shifted, in input order) were reported on and the next `unknownEntries` entries were
 * in a chunk of unknown outcome; every other entry is not attempted.
 */
export function mergeReports(
  totalEntries: number,
  reports: readonly { size: number; report: BatchReport }[],
  unknownEntries = 0,
): BatchReport & { unknown: number } {
  const merged: BatchReport & { unknown: number } = {
    created: 0,
    failed: 0,
    notAttempted: 0,
    unknown: unknownEntries,
    results: [],
  };
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
  merged.notAttempted += totalEntries - reportedEntries - unknownEntries;
  return merged;
}
