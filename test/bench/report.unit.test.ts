import { summarizeLatencies } from './latency';
import type { LoadResult } from './load-protocol';
import { formatMemorySummary, formatTable, judge, mergeRounds, summarizeMemory } from './report';
import type { ScenarioOutcome } from './report';
import { loadBenchSettings } from './settings';
import { scenario } from './scenario.fixture';

function result(fields: Partial<LoadResult>): LoadResult {
  return {
    succeeded: 1000,
    errors: 0,
    unexpectedStatuses: {},
    transportErrors: 0,
    elapsedSeconds: 10,
    perSecond: 100,
    p50Ms: 5,
    p99Ms: 9,
    meanMs: 5,
    warmupRequests: 0,
    ...fields,
  };
}

function outcome(
  id: string,
  fields: Partial<ScenarioOutcome> & { result?: LoadResult },
): ScenarioOutcome {
  return {
    id,
    title: id,
    subject: 'gateway',
    status: 'measured',
    peakRss: { gateway: 150 * 2 ** 20, worker: null, redirect: null },
    ...fields,
  };
}

describe('summarizeLatencies', () => {
  it('takes nearest-rank percentiles at full resolution', () => {
    const samples = Array.from({ length: 100 }, (_, i) => (100 - i) / 10);
    expect(summarizeLatencies(samples)).toEqual({ p50Ms: 5, p99Ms: 9.9, meanMs: 5.05 });
  });

  it('gives NaN without samples instead of inventing a figure', () => {
    expect(summarizeLatencies([]).p50Ms).toBeNaN();
  });
});

describe('judge', () => {
  it('compares throughput with the baseline of the same run', () => {
    const scenarios = [
      scenario({ id: 'base' }),
      scenario({ id: 'fast', goal: { kind: 'throughput-ratio', against: 'base', min: 0.7 } }),
      scenario({ id: 'slow', goal: { kind: 'throughput-ratio', against: 'base', min: 0.7 } }),
    ];
    const outcomes = [
      outcome('base', { result: result({ perSecond: 1000 }) }),
      outcome('fast', { result: result({ perSecond: 700 }) }),
      outcome('slow', { result: result({ perSecond: 699 }) }),
    ];
    judge(scenarios, outcomes);
    expect(outcomes[1].verdict?.result).toBe('PASS');
    expect(outcomes[1].comparison).toEqual({ against: 'base', metric: 'req/s', ratio: 0.7 });
    expect(outcomes[2].verdict?.result).toBe('FAIL');
  });

  it('allows latency up to factor x baseline + a constant', () => {
    const goal = { kind: 'latency-vs', against: 'insert', factor: 3, plusMs: 5 } as const;
    const scenarios = [
      scenario({ id: 'insert' }),
      scenario({ id: 'a', goal }),
      scenario({ id: 'b', goal }),
    ];
    const outcomes = [
      outcome('insert', { result: result({ p50Ms: 2 }) }),
      outcome('a', { result: result({ p50Ms: 11 }) }),
      outcome('b', { result: result({ p50Ms: 11.01 }) }),
    ];
    judge(scenarios, outcomes);
    expect(outcomes.map((o) => o.verdict?.result)).toEqual([undefined, 'PASS', 'FAIL']);
    expect(outcomes[1].comparison?.ratio).toBe(5.5);
  });

  it('compares links per second for batches', () => {
    const scenarios = [
      scenario({ id: 'single', linksPerRequest: 1 }),
      scenario({
        id: 'batch',
        linksPerRequest: 100,
        goal: { kind: 'links-ratio', against: 'single', min: 10 },
      }),
    ];
    const outcomes = [
      outcome('single', { result: result({ perSecond: 50 }), linksPerSecond: 50 }),
      outcome('batch', { result: result({ perSecond: 4.9 }), linksPerSecond: 490 }),
    ];
    judge(scenarios, outcomes);
    expect(outcomes[1].verdict?.result).toBe('FAIL');
    expect(outcomes[1].comparison).toEqual({ against: 'single', metric: 'links/s', ratio: 9.8 });
  });

  it('checks an absolute p50 bound', () => {
    const scenarios = [scenario({ id: 'list', goal: { kind: 'p50-max', ms: 50 } })];
    const outcomes = [outcome('list', { result: result({ p50Ms: 50.5 }) })];
    judge(scenarios, outcomes);
    expect(outcomes[0].verdict).toEqual({ target: 'p50 <= 50 ms', result: 'FAIL' });
  });

  it('fails a fast scenario that mostly errors', () => {
    const scenarios = [scenario({ id: 'list', goal: { kind: 'p50-max', ms: 50 } })];
    const outcomes = [outcome('list', { result: result({ p50Ms: 1, succeeded: 90, errors: 10 }) })];
    judge(scenarios, outcomes);
    expect(outcomes[0].verdict).toEqual({
      target: 'p50 <= 50 ms',
      result: 'FAIL',
      note: '10.0% errors',
    });
  });

  it('judges a creation line on CPU per created link too', () => {
    const goal = { kind: 'throughput-ratio', against: 'insert', min: 0.7 } as const;
    const scenarios = [
      scenario({ id: 'insert' }),
      scenario({ id: 'fast-cheap', goal, maxCpuMsPerLink: 1 }),
      scenario({ id: 'fast-costly', goal, maxCpuMsPerLink: 1 }),
      scenario({ id: 'slow-costly', goal, maxCpuMsPerLink: 1 }),
      scenario({ id: 'unmeasured', goal, maxCpuMsPerLink: 1 }),
    ];
    const outcomes = [
      outcome('insert', { result: result({ perSecond: 1000 }) }),
      outcome('fast-cheap', { result: result({ perSecond: 800 }), cpuMsPerLink: 1 }),
      outcome('fast-costly', { result: result({ perSecond: 800 }), cpuMsPerLink: 1.01 }),
      outcome('slow-costly', { result: result({ perSecond: 600 }), cpuMsPerLink: 3.3 }),
      outcome('unmeasured', { result: result({ perSecond: 800 }) }),
    ];
    judge(scenarios, outcomes);
    const target = 'req/s >= 0.7x insert; cpu/link <= 1 ms';
    expect(outcomes.slice(1).map((o) => o.verdict)).toEqual([
      { target, result: 'PASS' },
      { target, result: 'FAIL', note: 'cpu/link 1.01 ms' },
      { target, result: 'FAIL', note: 'cpu/link 3.30 ms, and the first target' },
      { target, result: 'FAIL', note: 'cpu/link not measured' },
    ]);
  });

  it('says n/a when the scenario or its baseline could not run', () => {
    const goal = { kind: 'throughput-ratio', against: 'base', min: 0.5 } as const;
    const scenarios = [
      scenario({ id: 'base' }),
      scenario({ id: 'a', goal }),
      scenario({ id: 'b', goal }),
    ];
    const outcomes = [
      outcome('base', { status: 'unavailable', reason: 'not built' }),
      outcome('a', { result: result({}) }),
      outcome('b', { status: 'unavailable', reason: 'HTTP 404' }),
    ];
    judge(scenarios, outcomes);
    expect(outcomes[1].verdict).toMatchObject({ result: 'n/a', note: 'base not measured' });
    expect(outcomes[2].verdict).toMatchObject({ result: 'n/a', note: 'not measured' });
  });
});

describe('formatTable', () => {
  it('prints one aligned line per scenario and explains unavailable ones', () => {
    const text = formatTable([
      outcome('get', {
        title: 'GET /links/{id}',
        result: result({ perSecond: 1234.4, unexpectedStatuses: { '503': 2 }, errors: 2 }),
        cpuMsPerRequest: { subject: 0.912, worker: 0.4 },
        cpuMsPerLink: 1.312,
        verdict: { target: 'req/s >= 0.7x base', result: 'PASS' },
      }),
      outcome('redirect', {
        title: 'redirect',
        status: 'unavailable',
        reason: 'redirect is not built',
      }),
    ]);
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^scenario\s+req\/s\s+links\/s\s+p50 ms/);
    expect(lines[2]).toMatch(
      /^GET \/links\/\{id\}\s+1,234\s+5\.00\s+9\.00\s+0\.91\+0\.40 wk\s+1\.31\s+2 \(503x2\)\s+150\s/,
    );
    expect(lines[2]).toMatch(/PASS$/);
    expect(lines[3]).toMatch(/^redirect\s+unavailable/);
    expect(text).toContain('redirect: unavailable: redirect is not built');
  });
});

describe('summarizeMemory', () => {
  const MB = 2 ** 20;
  const figures = (values: [number | null, number | null, number | null]) => ({
    gateway: values[0] === null ? null : values[0] * MB,
    worker: values[1] === null ? null : values[1] * MB,
    redirect: values[2] === null ? null : values[2] * MB,
  });
  const peaks = (gateway: number | null, worker: number | null, redirect: number | null) => ({
    peakRss: figures([gateway, worker, redirect]),
  });

  it('takes the highest gateway peak and the highest per-scenario sum, against the targets', () => {
    const summary = summarizeMemory([
      outcome('get-link', peaks(150, 100, 90)),
      outcome('qr-png', peaks(199, 90, 80)),
      // The highest sum, though neither of its processes holds the highest figure on its own.
      outcome('redirect', peaks(120, 110, 150)),
    ]);
    expect(summary.gateway).toEqual({ bytes: 199 * MB, scenario: 'qr-png' });
    expect(summary.total).toEqual({ bytes: 380 * MB, scenario: 'redirect', rssAddedUp: 380 * MB });
    expect(summary.verdicts.gateway.result).toBe('PASS');
    expect(summary.verdicts.total.result).toBe('PASS');
    expect(formatMemorySummary(summary).split('\n')).toEqual([
      'memory  gateway    199 MB (qr-png)  gateway peak RSS < 200 MB  PASS',
      'memory  all        380 MB (redirect; RSS added up 380 MB)  gateway + worker + redirect ' +
        'together (node binary once) < 413 MB  PASS',
    ]);
  });

  it('counts the file pages the three share once: the largest RssFile stands for them', () => {
    const summary = summarizeMemory([
      outcome('resolve', { ...peaks(150, 150, 150), fileRss: figures([52, 48, 47]) }),
      // More RSS added up, but less together: a higher share of it is the binary, counted thrice.
      outcome('redirect', { ...peaks(150, 150, 152), fileRss: figures([60, 60, 60]) }),
    ]);
    // 450 - (52 + 48 + 47) + 52
    expect(summary.total).toEqual({ bytes: 355 * MB, scenario: 'resolve', rssAddedUp: 450 * MB });
    expect(formatMemorySummary(summary).split('\n')[1]).toBe(
      'memory  all        355 MB (resolve; RSS added up 450 MB)  gateway + worker + redirect ' +
        'together (node binary once) < 413 MB  PASS',
    );
  });

  it('adds up the RSS figures as they are when a process lacks its RssFile', () => {
    const summary = summarizeMemory([
      outcome('resolve', { ...peaks(150, 150, 150), fileRss: figures([52, null, 47]) }),
    ]);
    expect(summary.total?.bytes).toBe(450 * MB);
    expect(summary.verdicts.total.result).toBe('FAIL');
  });

  it('fails at the target itself, and leaves scenarios missing a process out of the total', () => {
    const summary = summarizeMemory([
      outcome('list', peaks(200, null, null)),
      outcome('resolve', peaks(150, 150, 113)),
    ]);
    expect(summary.verdicts.gateway.result).toBe('FAIL');
    expect(summary.total).toEqual({ bytes: 413 * MB, scenario: 'resolve', rssAddedUp: 413 * MB });
    expect(summary.verdicts.total.result).toBe('FAIL');
  });

  it('says n/a when no scenario measured RSS', () => {
    const summary = summarizeMemory([outcome('base', peaks(null, null, null))]);
    expect(summary.verdicts.gateway).toMatchObject({ result: 'n/a', note: 'not measured' });
    expect(summary.verdicts.total.result).toBe('n/a');
  });
});

describe('mergeRounds', () => {
  const round = (fields: Partial<LoadResult>, extra: Partial<ScenarioOutcome> = {}) =>
    outcome('get-link', { result: result(fields), ...extra });

  it('adds up requests and time, takes the median latency, weights CPU by requests', () => {
    const merged = mergeRounds([
      round(
        { succeeded: 300, elapsedSeconds: 2, p50Ms: 1, p99Ms: 5, meanMs: 2, warmupRequests: 100 },
        {
          cpuMsPerRequest: { subject: 0.1 },
          peakRss: { gateway: 100, worker: null, redirect: null },
          fileRss: { gateway: 45, worker: null, redirect: null },
        },
      ),
      round(
        { succeeded: 500, elapsedSeconds: 2, p50Ms: 3, p99Ms: 9, meanMs: 4, errors: 2 },
        {
          cpuMsPerRequest: { subject: 0.2 },
          peakRss: { gateway: 300, worker: null, redirect: null },
          linksPerSecond: undefined,
        },
      ),
      round(
        {
          succeeded: 400,
          elapsedSeconds: 2,
          p50Ms: 2,
          p99Ms: 7,
          meanMs: 3,
          unexpectedStatuses: { '503': 1 },
        },
        {
          cpuMsPerRequest: { subject: 0.4 },
          peakRss: { gateway: 200, worker: null, redirect: null },
          fileRss: { gateway: 40, worker: null, redirect: null },
        },
      ),
    ]);
    expect(merged.result).toMatchObject({
      succeeded: 1200,
      errors: 2,
      elapsedSeconds: 6,
      perSecond: 200,
      p50Ms: 2,
      p99Ms: 7,
      meanMs: 3,
      warmupRequests: 100,
      unexpectedStatuses: { '503': 1 },
    });
    // (0.1 x 400 + 0.2 x 502 + 0.4 x 400) / 1302 requests
    expect(merged.cpuMsPerRequest?.subject).toBeCloseTo((40 + 100.4 + 160) / 1302, 10);
    expect(merged.peakRss.gateway).toBe(300);
    expect(merged.fileRss).toEqual({ gateway: 45, worker: null, redirect: null });
    expect(merged.rounds).toHaveLength(3);
  });

  it('gives links/s over all rounds and the worker CPU only when every round has it', () => {
    const merged = mergeRounds([
      round(
        { succeeded: 10, elapsedSeconds: 1 },
        { linksPerSecond: 1000, cpuMsPerRequest: { subject: 1, worker: 2 } },
      ),
      round(
        { succeeded: 30, elapsedSeconds: 3 },
        { linksPerSecond: 2000, cpuMsPerRequest: { subject: 1 } },
      ),
    ]);
    expect(merged.linksPerSecond).toBe(1750);
    expect(merged.cpuMsPerRequest).toEqual({ subject: 1 });
    expect(merged.fileRss).toBeUndefined();
  });

  it('weights CPU per created link by requests, when every round has it', () => {
    const rounds = [
      round({ succeeded: 100, elapsedSeconds: 1 }, { cpuMsPerLink: 3 }),
      round({ succeeded: 300, elapsedSeconds: 1 }, { cpuMsPerLink: 1 }),
    ];
    expect(mergeRounds(rounds).cpuMsPerLink).toBe(1.5);
    expect(mergeRounds([...rounds, round({})]).cpuMsPerLink).toBeUndefined();
  });

  it('is unavailable when any round was', () => {
    const missing = outcome('get-link', { status: 'unavailable', reason: 'gateway down' });
    expect(mergeRounds([round({}), missing])).toBe(missing);
  });

  it('and judge compares the merged figures', () => {
    const scenarios = [
      scenario({ id: 'base' }),
      scenario({ id: 'get-link', goal: { kind: 'throughput-ratio', against: 'base', min: 0.5 } }),
    ];
    // Round by round the machine slows down; both sides see the same stretches.
    const base = mergeRounds([
      outcome('base', { result: result({ succeeded: 900, elapsedSeconds: 1 }) }),
      outcome('base', { result: result({ succeeded: 300, elapsedSeconds: 1 }) }),
    ]);
    const own = mergeRounds([
      outcome('get-link', { result: result({ succeeded: 500, elapsedSeconds: 1 }) }),
      outcome('get-link', { result: result({ succeeded: 150, elapsedSeconds: 1 }) }),
    ]);
    judge(scenarios, [base, own]);
    expect(own.comparison?.ratio).toBeCloseTo(650 / 1200, 10);
    expect(own.verdict?.result).toBe('PASS');
  });
});

describe('loadBenchSettings', () => {
  it('has the documented defaults', () => {
    expect(loadBenchSettings({})).toMatchObject({
      links: 1_000_000,
      durationSeconds: 10,
      rounds: 3,
      connections: 10,
      only: [],
      keepDatabase: false,
    });
  });

  it('lists every bad variable and refuses anything but this machine', () => {
    expect(() =>
      loadBenchSettings({
        BENCH_LINKS: 'many',
        BENCH_DURATION_SECONDS: '0',
        BENCH_POSTGRES_URL: 'postgres://db.example.com/postgres',
      }),
    ).toThrow(
      /BENCH_LINKS must be a positive integer[^]*BENCH_DURATION_SECONDS[^]*BENCH_POSTGRES_URL must point at 127\.0\.0\.1/,
    );
  });
});
