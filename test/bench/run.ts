import { fork } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { createDb } from '@linkservice/db';
import { Redis } from 'ioredis';
import { deleteKeysWithPrefix } from '@linkservice/testing';
import { sql } from 'kysely';
import { createMigratedDatabase } from '../support/database';
import type { ScratchDatabase } from '../support/database';
import { freePort, sendRequest } from '@linkservice/testing';
import {
  ALL_SERVICES,
  ServiceProcess,
  repositoryRoot,
  serviceEntryPoint,
  startStack,
} from '../support/stack';
import type { ServiceName } from '../support/stack';
import { createTenant } from '../support/tenants';
import type { LoadJob, LoadResult, LoadRunnerMessage } from './load-protocol';
import { formatMemorySummary, formatTable, judge, mergeRounds, summarizeMemory } from './report';
import type { PeakRss, ScenarioOutcome } from './report';
import { buildScenarios, formatCount, SMALL_APP_LINKS } from './scenarios';
import { clickScenarios } from './clicks';
import type { Scenario, Subject } from './scenarios';
import { measurementGroups } from './scenarios';
import { CLUSTER_LINE_IDS } from './cluster-cost';
import { formatScaling, runScaling, SCALING_LINE_IDS } from './scaling';
import type { ScalingReport } from './scaling';
import { seedLargeApp, seedPublishableKey, vacuumAnalyze } from './seed';
import { startWebhookReceiver, subscribeToCreations } from './webhooks';
import type { AnalyticsApp } from './analytics';
import { ANALYTICS_LINKS, analyticsScenarios, seedAnalyticsApp } from './analytics';
import { loadBenchSettings } from './settings';
import type { BenchSettings } from './settings';

/**
 * `pnpm bench`: starts the compiled stack against a fresh database, seeds it, measures each
 * scenario from a forked load runner against the services and against bare baselines, prints
 * one table and writes the figures to test/bench/results/. Never fails CI: it exits non-zero
 * only when it could not run at all, never for a FAIL line.
 */

const LINK_DOMAIN = 'links.localhost';
const RESULTS_DIR = join(repositoryRoot(), 'test', 'bench', 'results');
/** Creations are limited per app per hour; the bench creates far more than the default 300. */
const BENCH_CREATION_LIMIT = 1_000_000_000;
/**
 * The app endpoints are limited per publishable key and client address per minute; the bench
 * sends them from one key and address at thousands per second (default limit: 600).
 */
const BENCH_SDK_LIMIT_PER_MINUTE = 1_000_000_000;

function progress(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The first lines of a startup failure: enough to say why without the whole log. */
function shortReason(error: unknown): string {
  const lines = describeError(error).split('\n');
  return lines.slice(0, 6).join(' | ').slice(0, 600);
}

/** Resources the run must release, in reverse order, whatever happens (also on Ctrl-C). */
class Cleanup {
  private readonly steps: (() => Promise<unknown>)[] = [];
  private running: Promise<void> | undefined;

  add(step: () => Promise<unknown>): void {
    this.steps.push(step);
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps.reverse()) {
        await step().catch((error: unknown) => {
          progress(`cleanup: ${describeError(error)}`);
        });
      }
    })();
    return this.running;
  }
}

interface Services {
  running: Partial<Record<ServiceName, ServiceProcess>>;
  unavailable: Partial<Record<ServiceName, string>>;
}

/**
 * With BENCH_TRACES_SAMPLE_RATIO: an OTLP/HTTP sink that accepts and discards every export (it
 * must cost the bench next to nothing), and the stack options that export to it at that ratio.
 */
async function tracingOptions(
  settings: BenchSettings,
  cleanup: Cleanup,
): Promise<{ otlpEndpoint?: string; env?: Record<string, string> }> {
  if (settings.tracesSampleRatio === undefined) return {};
  const sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  sink.listen(0, '127.0.0.1');
  await once(sink, 'listening');
  cleanup.add(async () => {
    sink.closeAllConnections();
    sink.close();
    await once(sink, 'close');
  });
  return {
    otlpEndpoint: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`,
    env: {
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: String(settings.tracesSampleRatio),
    },
  };
}

/**
 * Each service on its own, so a service that is not built or does not start only makes its
 * own scenarios unavailable.
 */
async function startServices(
  settings: BenchSettings,
  databaseUrl: string,
  redisPrefix: string,
  cleanup: Cleanup,
): Promise<Services> {
  const services: Services = { running: {}, unavailable: {} };
  const tracing = await tracingOptions(settings, cleanup);
  await Promise.all(
    ALL_SERVICES.map(async (name) => {
      if (!existsSync(serviceEntryPoint(name))) {
        services.unavailable[name] = `${name} is not built (no services/${name}/dist/main.js)`;
        return;
      }
      const profile = ['--cpu-prof', `--cpu-prof-dir=${join(RESULTS_DIR, 'profiles', name)}`];
      try {
        const stack = await startStack({
          execArgv: settings.cpuProfile ? { [name]: profile } : undefined,
          services: [name],
          databaseUrl,
          redisUrl: settings.redisUrl,
          redisPrefix,
          exactRedisPrefix: true,
          linkDomain: LINK_DOMAIN,
          creationLimitPerHour: BENCH_CREATION_LIMIT,
          serviceEnv: {
            gateway: {
              SDK_RATE_LIMIT_PER_MINUTE: String(BENCH_SDK_LIMIT_PER_MINUTE),
              ...settings.groupCommit,
            },
            // The webhook lines' receiver listens on loopback, in this process.
            worker: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' },
          },
          ...tracing,
          nodeEnv: 'production',
          logLevel: settings.logLevel,
          echo: settings.echo,
        });
        cleanup.add(() => stack.stop());
        services.running[name] = stack.service(name);
      } catch (error) {
        services.unavailable[name] = `${name} did not start: ${shortReason(error)}`;
      }
    }),
  );
  return services;
}

/** A second redirect of the same build with ANALYTICS_ENABLED=false; undefined if it fails. */
async function startRedirectWithoutAnalytics(
  settings: BenchSettings,
  databaseUrl: string,
  redisPrefix: string,
  cleanup: Cleanup,
): Promise<ServiceProcess | undefined> {
  if (!existsSync(serviceEntryPoint('redirect'))) return undefined;
  try {
    const profile = [
      '--cpu-prof',
      `--cpu-prof-dir=${join(RESULTS_DIR, 'profiles', 'redirect-without-analytics')}`,
    ];
    const stack = await startStack({
      execArgv: settings.cpuProfile ? { redirect: profile } : undefined,
      services: ['redirect'],
      databaseUrl,
      redisUrl: settings.redisUrl,
      // Its own prefix: the two redirects' flushers must not share each other's clicks.
      redisPrefix: `${redisPrefix}-plain`,
      exactRedisPrefix: true,
      linkDomain: LINK_DOMAIN,
      serviceEnv: { redirect: { ANALYTICS_ENABLED: 'false' } },
      nodeEnv: 'production',
      logLevel: settings.logLevel,
      echo: settings.echo,
    });
    cleanup.add(() => stack.stop());
    return stack.service('redirect');
  } catch (error) {
    progress(`redirect without analytics did not start: ${shortReason(error)}`);
    return undefined;
  }
}

async function startBaseline(
  name: string,
  script: string,
  env: Record<string, string>,
  settings: BenchSettings,
  cleanup: Cleanup,
): Promise<ServiceProcess> {
  const baseline = new ServiceProcess({
    name,
    entryPoint: join(__dirname, 'baselines', script),
    execArgv: settings.cpuProfile
      ? ['--cpu-prof', `--cpu-prof-dir=${join(RESULTS_DIR, 'profiles', name)}`]
      : undefined,
    portVariable: 'PORT',
    port: await freePort(),
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  cleanup.add(() => baseline.stop());
  await baseline.start(freePort);
  return baseline;
}

/** Runs one job in a fresh forked load runner and returns what it measured. */
function runLoad(job: LoadJob): Promise<LoadResult> {
  const runner = fork(join(__dirname, 'load-runner.js'), [], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const limitMs = (job.durationSeconds + job.warmupSeconds) * 1000 + 60_000;
  return new Promise<LoadResult>((resolve, reject) => {
    let answered = false;
    const timer = setTimeout(() => {
      runner.kill('SIGKILL');
      reject(new Error(`load runner gave no answer within ${limitMs} ms`));
    }, limitMs);
    runner.once('message', (message: LoadRunnerMessage) => {
      answered = true;
      clearTimeout(timer);
      if (message.ok) resolve(message.result);
      else reject(new Error(`load runner: ${message.error}`));
    });
    runner.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (!answered) {
        reject(new Error(`load runner exited without an answer (${String(signal ?? code)})`));
      }
    });
    runner.send(job);
  });
}

/** One request before the load: an endpoint that does not answer as expected yet is reported, not loaded. */
async function probe(job: LoadJob): Promise<string | undefined> {
  if (job.kind !== 'http') return undefined;
  try {
    const res = await sendRequest(`${job.origin}${job.paths[0] ?? '/'}`, {
      method: job.method,
      headers: job.headers,
      rawBody: job.bodies?.[0] ?? job.body,
      timeoutMs: 15_000,
    });
    if (res.status === job.expectStatus) return undefined;
    return `answered HTTP ${res.status} instead of ${job.expectStatus}: ${res.text.slice(0, 160)}`;
  } catch (error) {
    return `no answer: ${describeError(error)}`;
  }
}

const NO_PEAKS: PeakRss = { gateway: null, worker: null, redirect: null };

function resetPeakRss(services: Services): void {
  for (const process of Object.values(services.running)) process.resetPeakRss();
}

/** One figure of each stack process (null for one not running). */
function perProcess(services: Services, read: (process: ServiceProcess) => number | null): PeakRss {
  const { gateway, worker, redirect } = services.running;
  return {
    gateway: gateway ? read(gateway) : null,
    worker: worker ? read(worker) : null,
    redirect: redirect ? read(redirect) : null,
  };
}

/** CPU seconds each process used between two readings, per request. */
function cpuPerRequest(
  before: (number | null)[],
  after: (number | null)[],
  requests: number,
): (number | undefined)[] {
  return before.map((start, i) => {
    const end = after.at(i) ?? null;
    return start === null || end === null || requests === 0
      ? undefined
      : ((end - start) * 1000) / requests;
  });
}

async function measure(
  scenario: Scenario,
  subjects: Partial<Record<Subject, ServiceProcess>>,
  postgresUrl: string,
  unavailable: Partial<Record<Subject, string>>,
  services: Services,
  durationSeconds: number,
): Promise<ScenarioOutcome> {
  const base = {
    id: scenario.id,
    title: scenario.title,
    subject: scenario.subject,
    peakRss: NO_PEAKS,
  };
  const answering = subjects[scenario.subject];
  const origin = scenario.subject === 'postgres' ? postgresUrl : answering?.url;
  if (origin === undefined) {
    const reason = unavailable[scenario.subject] ?? `${scenario.subject} is not running`;
    return { ...base, status: 'unavailable', reason };
  }
  const job = { ...scenario.job(origin), durationSeconds };
  const refused = await probe(job);
  if (refused !== undefined) return { ...base, status: 'unavailable', reason: refused };

  const stackSubject = scenario.subject === 'gateway' || scenario.subject === 'redirect';
  if (stackSubject) resetPeakRss(services);
  // The worker does the creating; its CPU is part of what a create costs.
  const creates = scenario.subject === 'gateway' && scenario.linksPerRequest !== undefined;
  const measured = [answering, creates ? services.running.worker : undefined];
  const cpuBefore = measured.map((p) => p?.cpuSeconds() ?? null);
  try {
    const result = await runLoad(job);
    const [subjectCpu, workerCpu] = cpuPerRequest(
      cpuBefore,
      measured.map((p) => p?.cpuSeconds() ?? null),
      result.warmupRequests + result.succeeded + result.errors,
    );
    return {
      ...base,
      status: 'measured',
      result,
      ...(subjectCpu === undefined
        ? {}
        : { cpuMsPerRequest: { subject: subjectCpu, worker: workerCpu } }),
      ...(subjectCpu === undefined || !creates
        ? {}
        : { cpuMsPerLink: (subjectCpu + (workerCpu ?? 0)) / (scenario.linksPerRequest ?? 1) }),
      peakRss: stackSubject ? perProcess(services, (p) => p.peakRssBytes()) : NO_PEAKS,
      // The node binary's shared pages, counted once in the memory line (`togetherBytes`).
      ...(stackSubject ? { fileRss: perProcess(services, (p) => p.fileRssBytes()) } : {}),
      ...(scenario.linksPerRequest === undefined
        ? {}
        : { linksPerSecond: result.perSecond * scenario.linksPerRequest }),
    };
  } catch (error) {
    return { ...base, status: 'unavailable', reason: describeError(error) };
  }
}

async function deleteRedisKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  await redis.connect();
  try {
    await deleteKeysWithPrefix(redis, prefix);
  } finally {
    redis.disconnect();
  }
}

async function main(): Promise<void> {
  const settings = loadBenchSettings(process.env);
  // Every service this bench starts seals or opens webhook secrets with one key (startStack
  // passes the environment's on), and the bench subscribes an app with it.
  const webhookKey = (process.env.WEBHOOK_ENCRYPTION_KEY ??= randomBytes(32).toString('base64'));
  const startedAt = new Date();
  const loadBefore = loadavg();
  const cleanup = new Cleanup();
  process.once('SIGINT', () => {
    progress('interrupted: cleaning up');
    void cleanup.run().finally(() => process.exit(130));
  });

  try {
    progress('creating a fresh database');
    const scratch: ScratchDatabase = await createMigratedDatabase({
      serverUrl: settings.postgresUrl,
      namePrefix: 'linkservice_bench',
    });
    cleanup.add(() =>
      settings.keepDatabase
        ? Promise.resolve().then(() => {
            progress(`kept database ${scratch.url}`);
          })
        : scratch.drop(),
    );
    const handle = createDb({ connectionString: scratch.url, max: 2 });
    cleanup.add(() => handle.close());

    progress(`seeding ${formatCount(settings.links)} links with INSERT ... SELECT`);
    const seedStarted = Date.now();
    const large = await seedLargeApp(handle.db, settings.links);
    const largePublishableKey = await seedPublishableKey(handle.db, large.tenant.appId);
    const small = await seedLargeApp(handle.db, SMALL_APP_LINKS, {
      name: 'Bench: small app',
      tag: 'SMALL',
    });
    const creator = await createTenant(handle.db, { name: 'Bench: creations' });
    const baselineInserts = await createTenant(handle.db, { name: 'Bench: baseline inserts' });
    const insertServerApp = await createTenant(handle.db, {
      name: 'Bench: baseline insert server',
    });
    const plainCreator = await createTenant(handle.db, { name: 'Bench: creations, no webhook' });
    const webhookCreator = await createTenant(handle.db, { name: 'Bench: creations, webhook' });
    const receiver = await startWebhookReceiver();
    cleanup.add(() => receiver.close());
    await subscribeToCreations(handle.db, webhookCreator, receiver.url, webhookKey);
    await vacuumAnalyze(handle.db);
    // The analytics app only when one of its lines runs: its rollups take a minute to seed.
    const selected = (id: string) =>
      settings.only.length === 0 || settings.only.some((part) => id.includes(part));
    let analytics: AnalyticsApp | undefined;
    if (['analytics-link', 'analytics-top-links', 'analytics-app'].some(selected)) {
      progress(`seeding the analytics app (${formatCount(ANALYTICS_LINKS)} links, ~100M clicks)`);
      const started = Date.now();
      analytics = await seedAnalyticsApp(handle.db);
      progress(
        `analytics app seeded in ${((Date.now() - started) / 1000).toFixed(1)} s: ` +
          `${formatCount(analytics.clicks)} clicks, ${formatCount(analytics.linkDays)} link-days, ` +
          Object.entries(analytics.storage)
            .map(([table, bytes]) => `${table} ${(bytes / 1048576).toFixed(0)} MB`)
            .join(', '),
      );
    }
    const seedSeconds = (Date.now() - seedStarted) / 1000;
    progress(`seeded in ${seedSeconds.toFixed(1)} s`);
    const postgresVersion = (
      await sql<{ server_version: string }>`SHOW server_version`.execute(handle.db)
    ).rows.at(0)?.server_version;

    const redisPrefix = `lsbench-${randomBytes(4).toString('hex')}`;
    cleanup.add(() => deleteRedisKeys(settings.redisUrl, redisPrefix));
    progress('starting the services and the baselines');
    const services = await startServices(settings, scratch.url, redisPrefix, cleanup);
    for (const [name, reason] of Object.entries(services.unavailable)) {
      progress(`${name} unavailable: ${reason}`);
    }
    // Each baseline is `baselines/<kind>-server.js`, run as `baseline-<kind>`.
    const baseline = (kind: string, env: Record<string, string>) =>
      startBaseline(`baseline-${kind}`, `${kind}-server.js`, env, settings, cleanup);
    const databaseEnv = { DATABASE_URL: scratch.url, DATABASE_POOL_SIZE: '10', LINK_DOMAIN };
    const baselineRead = await baseline('read', databaseEnv);
    const baselineInsert = await baseline('insert', databaseEnv);
    const queuePrefix = `${redisPrefix}-queued`;
    cleanup.add(() => deleteRedisKeys(settings.redisUrl, queuePrefix));
    const baselineQueuedInsert = await baseline('queued-insert', {
      ...databaseEnv,
      REDIS_URL: settings.redisUrl,
      REDIS_PREFIX: queuePrefix,
    });
    const baselineRedirect = await baseline('redirect', {});
    const floorPrefix = `${redisPrefix}-floor`;
    cleanup.add(() => deleteRedisKeys(settings.redisUrl, floorPrefix));
    const baselineRedirectRedis = await baseline('redirect-redis', {
      REDIS_URL: settings.redisUrl,
      REDIS_PREFIX: floorPrefix,
    });

    // The same redirect build with analytics off, for the analytics line's ratio.
    cleanup.add(() => deleteRedisKeys(settings.redisUrl, `${redisPrefix}-plain`));
    const withoutAnalytics = await startRedirectWithoutAnalytics(
      settings,
      scratch.url,
      redisPrefix,
      cleanup,
    );
    const subjects: Partial<Record<Subject, ServiceProcess>> = {
      gateway: services.running.gateway,
      redirect: services.running.redirect,
      'redirect-without-analytics': withoutAnalytics,
      'baseline-read': baselineRead,
      'baseline-insert': baselineInsert,
      'baseline-queued-insert': baselineQueuedInsert,
      'baseline-redirect': baselineRedirect,
      'baseline-redirect-redis': baselineRedirectRedis,
    };
    const unavailable: Partial<Record<Subject, string>> = {
      gateway: services.unavailable.gateway,
      redirect: services.unavailable.redirect,
    };

    const inputs = {
      settings,
      databaseUrl: scratch.url,
      linkDomain: LINK_DOMAIN,
      large: large.tenant,
      largeLinks: large.links,
      largePublishableKey,
      creator,
      baselineInserts,
      insertServerApp,
      small: small.tenant,
      plainCreator,
      webhookCreator,
    };
    // The click lines last: their clicks must not change what the other lines measure.
    const scenarios = [
      ...buildScenarios(inputs),
      ...(analytics ? analyticsScenarios({ settings, analytics }) : []),
      ...clickScenarios(inputs),
    ].filter((s) => selected(s.id));

    const outcomes: ScenarioOutcome[] = [];
    for (const group of measurementGroups(scenarios)) {
      const rounds = group.length > 1 ? settings.rounds : 1;
      const roundsOf = group.map((): ScenarioOutcome[] => []);
      for (let round = 1; round <= rounds; round++) {
        for (const [index, member] of group.entries()) {
          const roundNote = rounds > 1 ? ` (round ${round} of ${rounds})` : '';
          progress(`${member.id}: ${member.title}${roundNote}`);
          const details = await member.before?.();
          if (details) progress(`  before: ${JSON.stringify(details)}`);
          const measured = await measure(
            member,
            subjects,
            scratch.url,
            unavailable,
            services,
            settings.durationSeconds / rounds,
          );
          const outcome = details ? { ...measured, details } : measured;
          if (outcome.status === 'unavailable') progress(`  unavailable: ${outcome.reason ?? ''}`);
          else if (outcome.result) {
            progress(
              `  ${outcome.result.perSecond.toFixed(1)}/s, p50 ${outcome.result.p50Ms.toFixed(2)} ms, ` +
                `p99 ${outcome.result.p99Ms.toFixed(2)} ms, ${outcome.result.errors} errors`,
            );
          }
          roundsOf[index]?.push(outcome);
        }
      }
      for (const measuredRounds of roundsOf) {
        outcomes.push(
          measuredRounds.length === 1 && measuredRounds[0]
            ? measuredRounds[0]
            : mergeRounds(measuredRounds),
        );
      }
    }
    judge(scenarios, outcomes);

    // The scale-out lines: processes of their own on a Redis of their own (test/bench/scaling.ts).
    const scalingSelected = SCALING_LINE_IDS.filter(
      (id) => settings.only.length === 0 || settings.only.some((part) => id.includes(part)),
    );
    const clusterSelected = CLUSTER_LINE_IDS.filter(
      (id) => settings.only.length === 0 || settings.only.some((part) => id.includes(part)),
    );
    let scaling: ScalingReport | undefined;
    if (scalingSelected.length > 0 || clusterSelected.length > 0) {
      scaling = await runScaling({
        settings,
        databaseUrl: scratch.url,
        linkDomain: LINK_DOMAIN,
        large: large.tenant,
        largeLinks: large.links,
        largePublishableKey,
        creator,
        selected: scalingSelected,
        clusterLines: clusterSelected,
        runLoad,
        progress,
      });
    }

    const overallPeak = (process: keyof PeakRss): number | null => {
      const peaks = outcomes.map((o) => o.peakRss[process]).filter((v): v is number => v !== null);
      return peaks.length ? Math.max(...peaks) : null;
    };
    const memory = summarizeMemory(outcomes);
    const machine = {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      postgres: postgresVersion ?? 'unknown',
      loadAverageBefore: loadBefore.map((v) => Number(v.toFixed(2))),
      loadAverageAfter: loadavg().map((v) => Number(v.toFixed(2))),
    };
    const report = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      machine,
      settings: { ...settings, postgresUrl: undefined, redisUrl: undefined },
      seedSeconds,
      peakRss: {
        gateway: overallPeak('gateway'),
        worker: overallPeak('worker'),
        redirect: overallPeak('redirect'),
      },
      memory,
      unavailableServices: services.unavailable,
      scenarios: outcomes,
      ...(scaling && { scaling }),
    };

    const mb = (bytes: number | null): string =>
      bytes === null ? 'n/a' : `${(bytes / 2 ** 20).toFixed(0)} MB`;
    process.stdout.write(
      [
        '',
        `linkservice bench, ${startedAt.toISOString()}: ${machine.cpus} x ${machine.cpuModel}, ` +
          `${machine.memoryGiB} GiB, node ${machine.node}, PostgreSQL ${machine.postgres}`,
        `load average before ${machine.loadAverageBefore.join(' ')}, after ${machine.loadAverageAfter.join(' ')}; ` +
          `${settings.durationSeconds} s per scenario after ${settings.warmupSeconds} s warm-up ` +
          `(a target's scenario and baseline: ${settings.rounds} alternating rounds sharing the ` +
          `${settings.durationSeconds} s, each after its own warm-up), ` +
          `${settings.connections} connections for throughput lines, LOG_LEVEL=${settings.logLevel}`,
        '',
        formatTable(outcomes),
        '',
        `peak RSS over the run: gateway ${mb(report.peakRss.gateway)}, worker ${mb(report.peakRss.worker)}, ` +
          `redirect ${mb(report.peakRss.redirect)} (gw/wk/rd MB columns: peak during that scenario; ` +
          'VmHWM is reset before each)',
        formatMemorySummary(memory),
        '',
        ...(scaling ? [formatScaling(scaling, machine.cpus), ''] : []),
      ].join('\n'),
    );

    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `bench-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
    const text = `${JSON.stringify(report, null, 2)}\n`;
    writeFileSync(file, text);
    writeFileSync(join(RESULTS_DIR, 'latest.json'), text);
    process.stdout.write(`results: ${file}\n`);
  } finally {
    progress('stopping and cleaning up');
    await cleanup.run();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`bench could not run: ${describeError(error)}\n`);
  process.exitCode = 1;
});
