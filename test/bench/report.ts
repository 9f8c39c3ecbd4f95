import type { LoadResult } from './load-protocol';
import type { Goal, Scenario, Subject } from './scenarios';

/** Peak RSS of each stack process during one scenario, bytes; null when not measured. */
export interface PeakRss {
  gateway: number | null;
  worker: number | null;
  redirect: number | null;
}

export interface Verdict {
  target: string;
  result: 'PASS' | 'FAIL' | 'n/a';
  note?: string;
}

export interface ScenarioOutcome {
  id: string;
  title: string;
  subject: Subject;
  status: 'measured' | 'unavailable';
  /** Why a scenario could not run (endpoint missing, service not built or not starting...). */
  reason?: string;
  result?: LoadResult;
  linksPerSecond?: number;
  /** Peak RSS during this scenario (VmHWM after a reset), bytes. */
  peakRss: PeakRss;
  /**
   * Each stack process's file-backed resident memory (RssFile) when the scenario ended, bytes:
   * nearly all of it the node binary's pages, one copy in memory that every process's RSS
   * counts again. Absent where peakRss was not measured.
   */
  fileRss?: PeakRss;
  /**
   * CPU time per request (warm-up included) of the process answering, and for creations also
   * of the worker, in milliseconds, from /proc/<pid>/stat. Not measured for SQL baselines.
   */
  cpuMsPerRequest?: { subject: number; worker?: number };
  /**
   * Creation lines: the gateway's and the worker's CPU together per created link, ms
   * (cpuMsPerRequest's sum over links per request).
   */
  cpuMsPerLink?: number;
  comparison?: { against: string; metric: 'req/s' | 'p50' | 'links/s'; ratio: number };
  /** Each round's figures, when the scenario ran in alternating rounds with its baseline. */
  rounds?: LoadResult[];
  /** What the scenario's `before` step reported. */
  details?: Record<string, unknown>;
  verdict?: Verdict;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
};

/**
 * One scenario's rounds as one outcome. Requests, errors and time add up, so req/s and links/s
 * are over all rounds; p50, p99 and mean are the medians of the rounds' (rounds of one load and
 * equal length, so close to what the whole run would give); CPU per request is weighted by each
 * round's requests; peak RSS is the highest. An unavailable round makes the whole unavailable.
 */
export function mergeRounds(rounds: readonly ScenarioOutcome[]): ScenarioOutcome {
  const first = rounds.at(0);
  if (first === undefined) throw new Error('mergeRounds needs at least one round');
  const unavailable = rounds.find((round) => round.status !== 'measured' || !round.result);
  if (unavailable) return unavailable;
  const results = rounds.map((round) => round.result as LoadResult);
  const sum = (pick: (result: LoadResult) => number): number =>
    results.reduce((total, result) => total + pick(result), 0);
  const succeeded = sum((r) => r.succeeded);
  const elapsedSeconds = sum((r) => r.elapsedSeconds);
  const unexpectedStatuses: Record<string, number> = {};
  for (const result of results) {
    for (const [status, count] of Object.entries(result.unexpectedStatuses)) {
      unexpectedStatuses[status] = (unexpectedStatuses[status] ?? 0) + count;
    }
  }
  const sampleError = results.find((r) => r.sampleError !== undefined)?.sampleError;
  const result: LoadResult = {
    succeeded,
    errors: sum((r) => r.errors),
    unexpectedStatuses,
    transportErrors: sum((r) => r.transportErrors),
    ...(sampleError === undefined ? {} : { sampleError }),
    elapsedSeconds,
    perSecond: elapsedSeconds > 0 ? succeeded / elapsedSeconds : 0,
    p50Ms: median(results.map((r) => r.p50Ms)),
    p99Ms: median(results.map((r) => r.p99Ms)),
    meanMs: median(results.map((r) => r.meanMs)),
    warmupRequests: sum((r) => r.warmupRequests),
  };

  const requests = (r: LoadResult): number => r.warmupRequests + r.succeeded + r.errors;
  const weighted = (pick: (round: ScenarioOutcome) => number | undefined): number | undefined => {
    let cpu = 0;
    let counted = 0;
    for (const round of rounds) {
      const perRequest = pick(round);
      if (perRequest === undefined) return undefined;
      const n = requests(round.result as LoadResult);
      cpu += perRequest * n;
      counted += n;
    }
    return counted === 0 ? undefined : cpu / counted;
  };
  const subjectCpu = weighted((round) => round.cpuMsPerRequest?.subject);
  const workerCpu = weighted((round) => round.cpuMsPerRequest?.worker);
  const cpuPerLink = weighted((round) => round.cpuMsPerLink);
  const highest = (process: keyof PeakRss, figures: 'peakRss' | 'fileRss'): number | null => {
    const peaks = rounds
      .map((r) => r[figures]?.[process] ?? null)
      .filter((v): v is number => v !== null);
    return peaks.length > 0 ? Math.max(...peaks) : null;
  };
  const fileRss = rounds.some((r) => r.fileRss !== undefined)
    ? {
        gateway: highest('gateway', 'fileRss'),
        worker: highest('worker', 'fileRss'),
        redirect: highest('redirect', 'fileRss'),
      }
    : undefined;
  const linksPerSecond = rounds.every((r) => r.linksPerSecond !== undefined)
    ? rounds.reduce(
        (total, r) => total + (r.linksPerSecond ?? 0) * (r.result as LoadResult).elapsedSeconds,
        0,
      ) / elapsedSeconds
    : undefined;

  return {
    id: first.id,
    title: first.title,
    subject: first.subject,
    status: 'measured',
    result,
    ...(linksPerSecond === undefined ? {} : { linksPerSecond }),
    peakRss: {
      gateway: highest('gateway', 'peakRss'),
      worker: highest('worker', 'peakRss'),
      redirect: highest('redirect', 'peakRss'),
    },
    ...(fileRss === undefined ? {} : { fileRss }),
    ...(subjectCpu === undefined
      ? {}
      : {
          cpuMsPerRequest: {
            subject: subjectCpu,
            ...(workerCpu === undefined ? {} : { worker: workerCpu }),
          },
        }),
    ...(cpuPerLink === undefined ? {} : { cpuMsPerLink: cpuPerLink }),
    rounds: results,
  };
}

/** More failed requests than this share makes a goal FAIL whatever the figures. */
const ERROR_TOLERANCE = 0.01;

function errorShare(result: LoadResult): number {
  const total = result.succeeded + result.errors;
  return total === 0 ? 1 : result.errors / total;
}

function describeGoal(goal: Goal): string {
  switch (goal.kind) {
    case 'throughput-ratio':
      return `req/s >= ${goal.min}x ${goal.against}`;
    case 'latency-vs':
      return `p50 <= ${goal.factor}x ${goal.against} p50 + ${goal.plusMs} ms`;
    case 'links-ratio':
      return `links/s >= ${goal.min}x ${goal.against}`;
    case 'p50-max':
      return `p50 <= ${goal.ms} ms`;
  }
}

/** Fills in each outcome's comparison and PASS/FAIL from the other outcomes of the run. */
export function judge(scenarios: readonly Scenario[], outcomes: ScenarioOutcome[]): void {
  const byId = new Map(outcomes.map((o) => [o.id, o]));
  const measured = (id: string): ScenarioOutcome | undefined => {
    const found = byId.get(id);
    return found?.status === 'measured' && found.result && found.result.succeeded > 0
      ? found
      : undefined;
  };
  for (const scenario of scenarios) {
    const outcome = byId.get(scenario.id);
    if (!outcome) continue;
    const own = measured(scenario.id);
    const goal = scenario.goal;

    const compareId = goal && goal.kind !== 'p50-max' ? goal.against : scenario.compareWith;
    const other = compareId === undefined ? undefined : measured(compareId);
    if (own?.result && other?.result && compareId !== undefined) {
      if (goal?.kind === 'latency-vs') {
        outcome.comparison = {
          against: compareId,
          metric: 'p50',
          ratio: own.result.p50Ms / other.result.p50Ms,
        };
      } else if (own.linksPerSecond !== undefined && other.linksPerSecond !== undefined) {
        outcome.comparison = {
          against: compareId,
          metric: 'links/s',
          ratio: own.linksPerSecond / other.linksPerSecond,
        };
      } else {
        outcome.comparison = {
          against: compareId,
          metric: 'req/s',
          ratio: own.result.perSecond / other.result.perSecond,
        };
      }
    }

    if (!goal) continue;
    const cpuLimit = scenario.maxCpuMsPerLink;
    const target =
      describeGoal(goal) + (cpuLimit === undefined ? '' : `; cpu/link <= ${cpuLimit} ms`);
    if (!own?.result) {
      outcome.verdict = { target, result: 'n/a', note: 'not measured' };
      continue;
    }
    if (goal.kind !== 'p50-max' && !other?.result) {
      outcome.verdict = { target, result: 'n/a', note: `${goal.against} not measured` };
      continue;
    }
    const result = own.result;
    let pass: boolean;
    switch (goal.kind) {
      case 'p50-max':
        pass = result.p50Ms <= goal.ms;
        break;
      case 'throughput-ratio':
        pass = result.perSecond >= goal.min * other!.result!.perSecond;
        break;
      case 'latency-vs':
        pass = result.p50Ms <= goal.factor * other!.result!.p50Ms + goal.plusMs;
        break;
      case 'links-ratio':
        pass = (own.linksPerSecond ?? 0) >= goal.min * (other!.linksPerSecond ?? Infinity);
        break;
    }
    const share = errorShare(result);
    const cpu = own.cpuMsPerLink;
    const cpuFailed = cpuLimit !== undefined && !(cpu !== undefined && cpu <= cpuLimit);
    outcome.verdict =
      share > ERROR_TOLERANCE
        ? { target, result: 'FAIL', note: `${(share * 100).toFixed(1)}% errors` }
        : cpuFailed
          ? {
              target,
              result: 'FAIL',
              note: `cpu/link ${cpu === undefined ? 'not measured' : `${number(cpu, 2)} ms`}${pass ? '' : ', and the first target'}`,
            }
          : { target, result: pass ? 'PASS' : 'FAIL' };
  }
}

const number = (value: number, digits = 0): string =>
  Number.isFinite(value)
    ? value.toLocaleString('en-US', {
        minimumFractionDigits: digits,
        maximumFractionDigits: digits,
      })
    : '-';
const megabytes = (bytes: number | null): string =>
  bytes === null ? '-' : number(bytes / (1024 * 1024));

/**
 * The memory targets: the gateway's peak RSS, and what the gateway, worker and redirect held
 * together at their peaks, in MB. LinkForty's processes together peaked at 413 MB on this
 * machine under the same kind of load.
 */
export const MEMORY_TARGETS_MB = { gateway: 200, total: 413 } as const;

export interface MemorySummary {
  /** The highest per-scenario peak of the gateway, bytes, and the scenario it was seen in. */
  gateway: { bytes: number; scenario: string } | null;
  /**
   * The highest per-scenario figure for the three processes together, bytes (`togetherBytes`),
   * its scenario, and their three peak RSS figures added up as they are (`rssAddedUp`).
   */
  total: { bytes: number; scenario: string; rssAddedUp: number } | null;
  verdicts: { gateway: Verdict; total: Verdict };
}

const MiB = 2 ** 20;
const PROCESSES = ['gateway', 'worker', 'redirect'] as const;

/**
 * The memory the three processes held together at their peaks, bytes: their peak RSS figures
 * added up, with the file-backed pages they share counted once. Each process maps the same node
 * binary, and RSS counts its resident pages (about 50 MB here) in every process that touched
 * them, though they are in memory once; the largest of the three RssFile figures stands for
 * the one copy (on this machine their union measured within 1 MB of it, by page frame). Without
 * the three RssFile figures, the RSS figures added up. Null when a peak is missing.
 */
export function togetherBytes(peakRss: PeakRss, fileRss: PeakRss | undefined): number | null {
  const peaks = PROCESSES.map((p) => peakRss[p]);
  if (peaks.some((v) => v === null)) return null;
  const sum = (peaks as number[]).reduce((a, b) => a + b, 0);
  const files = PROCESSES.map((p) => fileRss?.[p] ?? null);
  if (files.some((v) => v === null)) return sum;
  const counted = files as number[];
  return sum - counted.reduce((a, b) => a + b, 0) + Math.max(...counted);
}

/**
 * The `memory` line: the highest peaks over the scenarios that measured RSS, judged against
 * MEMORY_TARGETS_MB. A scenario that lacks one of the three processes' figures does not count
 * towards the total (its sum would understate it).
 */
export function summarizeMemory(outcomes: readonly ScenarioOutcome[]): MemorySummary {
  let gateway: MemorySummary['gateway'] = null;
  let total: MemorySummary['total'] = null;
  for (const o of outcomes) {
    const { gateway: gw, worker: wk, redirect: rd } = o.peakRss;
    if (gw !== null && (gateway === null || gw > gateway.bytes)) {
      gateway = { bytes: gw, scenario: o.id };
    }
    const together = togetherBytes(o.peakRss, o.fileRss);
    if (together === null || (total !== null && together <= total.bytes)) continue;
    total = { bytes: together, scenario: o.id, rssAddedUp: (gw ?? 0) + (wk ?? 0) + (rd ?? 0) };
  }
  const verdict = (peak: { bytes: number } | null, limitMb: number, what: string): Verdict => ({
    target: `${what} < ${limitMb} MB`,
    result: peak === null ? 'n/a' : peak.bytes < limitMb * MiB ? 'PASS' : 'FAIL',
    ...(peak === null ? { note: 'not measured' } : {}),
  });
  return {
    gateway,
    total,
    verdicts: {
      gateway: verdict(gateway, MEMORY_TARGETS_MB.gateway, 'gateway peak RSS'),
      total: verdict(
        total,
        MEMORY_TARGETS_MB.total,
        'gateway + worker + redirect together (node binary once)',
      ),
    },
  };
}

/** The summary as two lines under the table, e.g. `memory  gateway  183 MB (qr-png) ... PASS`. */
export function formatMemorySummary(summary: MemorySummary): string {
  const line = (label: string, figure: string, verdict: Verdict): string =>
    `memory  ${label.padEnd(8)} ${figure}  ${verdict.target}  ${verdict.result}${
      verdict.note ? ` (${verdict.note})` : ''
    }`;
  const mb = (bytes: number): string => number(bytes / MiB).padStart(5);
  const { gateway, total } = summary;
  return [
    line(
      'gateway',
      gateway === null ? 'n/a' : `${mb(gateway.bytes)} MB (${gateway.scenario})`,
      summary.verdicts.gateway,
    ),
    line(
      'all',
      total === null
        ? 'n/a'
        : `${mb(total.bytes)} MB (${total.scenario}; RSS added up ${number(total.rssAddedUp / MiB)} MB)`,
      summary.verdicts.total,
    ),
  ].join('\n');
}

/** One fixed-width table, one line per scenario. */
export function formatTable(outcomes: readonly ScenarioOutcome[]): string {
  const header = [
    'scenario',
    'req/s',
    'links/s',
    'p50 ms',
    'p99 ms',
    'cpu ms/req',
    'cpu ms/link',
    'errors',
    'gw MB',
    'wk MB',
    'rd MB',
    'ratio',
    'target',
    'result',
  ];
  const rows: string[][] = outcomes.map((o) => {
    const r = o.result;
    const ratio = o.comparison
      ? `${number(o.comparison.ratio, 2)}x ${o.comparison.metric} vs ${o.comparison.against}`
      : '';
    const verdict = o.verdict
      ? `${o.verdict.result}${o.verdict.note ? ` (${o.verdict.note})` : ''}`
      : '';
    if (o.status === 'unavailable' || !r) {
      return [
        o.title,
        'unavailable',
        ...Array<string>(10).fill(''),
        o.verdict?.target ?? '',
        verdict,
      ];
    }
    const stackProcess = o.subject === 'gateway' || o.subject === 'redirect';
    return [
      o.title,
      number(r.perSecond),
      o.linksPerSecond === undefined ? '' : number(o.linksPerSecond),
      number(r.p50Ms, 2),
      number(r.p99Ms, 2),
      formatCpu(o.cpuMsPerRequest),
      o.cpuMsPerLink === undefined ? '' : number(o.cpuMsPerLink, 2),
      r.errors === 0 ? '0' : `${number(r.errors)}${describeErrors(r)}`,
      stackProcess ? megabytes(o.peakRss.gateway) : '',
      stackProcess ? megabytes(o.peakRss.worker) : '',
      stackProcess ? megabytes(o.peakRss.redirect) : '',
      ratio,
      o.verdict?.target ?? '',
      verdict,
    ];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const numeric = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => (numeric.has(i) ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  const notes = outcomes
    .filter((o) => o.status === 'unavailable')
    .map((o) => `  ${o.title}: unavailable: ${o.reason ?? 'unknown reason'}`);
  return [line(header), rule, ...rows.map(line), ...(notes.length ? ['', ...notes] : [])].join(
    '\n',
  );
}

function formatCpu(cpu: ScenarioOutcome['cpuMsPerRequest']): string {
  if (!cpu) return '';
  const subject = number(cpu.subject, 2);
  return cpu.worker === undefined ? subject : `${subject}+${number(cpu.worker, 2)} wk`;
}

function describeErrors(result: LoadResult): string {
  const statuses = Object.entries(result.unexpectedStatuses).map(
    ([status, count]) => `${status}x${count}`,
  );
  if (result.transportErrors > 0) statuses.push(`net x${result.transportErrors}`);
  return statuses.length ? ` (${statuses.join(' ')})` : '';
}
