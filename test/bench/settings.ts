export interface BenchSettings {
  /** Links in the large app that list and search run against. */
  links: number;
  /** Measured seconds per scenario, after the warm-up. */
  durationSeconds: number;
  warmupSeconds: number;
  /**
   * A target that compares a scenario with its baseline measures the two in this many
   * alternating rounds (durationSeconds split between them), so both sample the same stretches
   * of a machine whose speed drifts.
   */
  rounds: number;
  /** Keep-alive connections for the throughput scenarios (GET by id, redirect, concurrent create). */
  connections: number;
  /** LOG_LEVEL of the services under load. */
  logLevel: string;
  postgresUrl: string;
  redisUrl: string;
  /**
   * BENCH_TRACES_SAMPLE_RATIO: run the services with tracing on, sampling this share of traces
   * (parentbased_traceidratio), exported over OTLP/HTTP to a sink in the bench that discards them.
   * Unset: tracing off, as in production without an exporter.
   */
  tracesSampleRatio: number | undefined;
  /** Keep the bench database afterwards (for EXPLAIN after a run). */
  keepDatabase: boolean;
  /** Run only scenarios whose id contains one of these (comma-separated BENCH_ONLY). */
  only: string[];
  echo: boolean;
  /** Run the services with `node --cpu-prof`; profiles land in test/bench/results/profiles/. */
  cpuProfile: boolean;
  /**
   * The gateway's group-commit settings for this run (BENCH_CREATION_GROUP_WAIT_MS,
   * BENCH_CREATION_GROUPS_IN_FLIGHT), so settings can be compared without a rebuild; unset, the
   * gateway's defaults.
   */
  groupCommit: { CREATION_GROUP_WAIT_MS?: string; CREATION_GROUPS_IN_FLIGHT?: string };
}

type Env = Record<string, string | undefined>;

function positiveInteger(env: Env, name: string, fallback: number, problems: string[]): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    problems.push(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
    return fallback;
  }
  return value;
}

/** BENCH_* variables tune a run; the defaults are the documented configuration. */
export function loadBenchSettings(env: Env): BenchSettings {
  const problems: string[] = [];
  const settings: BenchSettings = {
    links: positiveInteger(env, 'BENCH_LINKS', 1_000_000, problems),
    durationSeconds: positiveInteger(env, 'BENCH_DURATION_SECONDS', 10, problems),
    warmupSeconds: positiveInteger(env, 'BENCH_WARMUP_SECONDS', 2, problems),
    rounds: positiveInteger(env, 'BENCH_ROUNDS', 3, problems),
    connections: positiveInteger(env, 'BENCH_CONNECTIONS', 10, problems),
    logLevel: env.BENCH_LOG_LEVEL ?? 'warn',
    postgresUrl: env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    redisUrl: env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    keepDatabase: env.BENCH_KEEP_DATABASE === 'true',
    only: (env.BENCH_ONLY ?? '')
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part !== ''),
    echo: env.BENCH_ECHO === 'true',
    cpuProfile: env.BENCH_CPU_PROFILE === 'true',
    tracesSampleRatio: sampleRatio(env.BENCH_TRACES_SAMPLE_RATIO, problems),
    groupCommit: {},
  };
  for (const name of ['CREATION_GROUP_WAIT_MS', 'CREATION_GROUPS_IN_FLIGHT'] as const) {
    if (env[`BENCH_${name}`] === undefined) continue;
    settings.groupCommit[name] = String(positiveInteger(env, `BENCH_${name}`, 1, problems));
  }
  for (const [name, url] of [
    ['BENCH_POSTGRES_URL', settings.postgresUrl],
    ['BENCH_REDIS_URL', settings.redisUrl],
  ] as const) {
    const host = URL.canParse(url) ? new URL(url).hostname : '';
    // The bench drives load at full speed: it must never point at anything but this machine.
    if (host !== '127.0.0.1' && host !== 'localhost') {
      problems.push(`${name} must point at 127.0.0.1, got ${JSON.stringify(url)}`);
    }
  }
  if (problems.length > 0) throw new Error(`bad bench settings:\n  ${problems.join('\n  ')}`);
  return settings;
}

function sampleRatio(raw: string | undefined, problems: string[]): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0 || value > 1) {
    problems.push(
      `BENCH_TRACES_SAMPLE_RATIO must be a number from 0 to 1, got ${JSON.stringify(raw)}`,
    );
    return undefined;
  }
  return value;
}
