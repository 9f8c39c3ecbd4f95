/**
 * What the bench's parent process sends to a forked load runner, and what comes back. Load is
 * generated in a separate process so the client's CPU never counts against the orchestrator
 * (and the orchestrator's event loop never slows the client).
 */

/** HTTP load with autocannon over keep-alive connections. */
export interface HttpLoadJob {
  kind: 'http';
  /** `http://127.0.0.1:<port>` */
  origin: string;
  method: 'GET' | 'POST';
  /** Request paths, used round-robin (e.g. 1,000 different link ids). */
  paths: string[];
  headers: Record<string, string>;
  body?: string;
  /**
   * Request bodies, used round-robin in step with `paths` (e.g. 1,000 different link URLs to
   * resolve); `body` for every request when absent.
   */
  bodies?: string[];
  /** The status a successful request answers with; any other counts as an error. */
  expectStatus: number;
  connections: number;
  durationSeconds: number;
  /** Load run first and thrown away: JIT, pools and caches warm up as in a long-running service. */
  warmupSeconds: number;
}

/**
 * The creation baseline: multi-row INSERTs of link rows straight through pg, one statement at a
 * time on one connection, for the duration.
 */
export interface SqlInsertLoadJob {
  kind: 'sql-insert';
  databaseUrl: string;
  appId: string;
  rowsPerStatement: number;
  durationSeconds: number;
  warmupSeconds: number;
}

export type LoadJob = HttpLoadJob | SqlInsertLoadJob;

export interface LoadResult {
  /** Requests (or statements) that succeeded as expected. */
  succeeded: number;
  /** Failed requests: connection errors, timeouts and unexpected statuses. */
  errors: number;
  /** Count per unexpected status code, e.g. { "503": 12 }. */
  unexpectedStatuses: Record<string, number>;
  /** Connection-level errors (refused, reset, timeouts), with one sample message. */
  transportErrors: number;
  sampleError?: string;
  elapsedSeconds: number;
  /** succeeded / elapsedSeconds */
  perSecond: number;
  /** Latency of successful requests, milliseconds. */
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
  /** Requests (or statements) sent during the warm-up, which the figures above leave out. */
  warmupRequests: number;
}

export type LoadRunnerMessage = { ok: true; result: LoadResult } | { ok: false; error: string };
