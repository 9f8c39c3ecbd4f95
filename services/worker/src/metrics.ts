import { throttledErrorLog } from '@linkservice/logger';
import { CREATE_LINKS_QUEUE, creationQueuePrefix } from '@linkservice/creation';
import type { MetricsServer, Registry } from '@linkservice/metrics';
import {
  Counter,
  createMetricsRegistry,
  Gauge,
  Histogram,
  secondsSince,
  startMetricsServer,
  withinOr,
} from '@linkservice/metrics';
import type { Job } from 'bullmq';
import { Queue, UnrecoverableError } from 'bullmq';
import type { CreationJobReply } from './creation-job.processor';
import type { WorkerDeps } from './deps';
import { WebhookMetrics } from './webhooks/webhook.metrics';

/**
 * What became of one attempt of a creation job: `completed` (the worker answered with per-entry
 * results, failed entries included), `abandoned` (past its deadline, or the gateway gave up on
 * it: nothing created), `retried` (it threw and rolled back; BullMQ tries again), `failed` (it
 * threw on its last attempt, or can never succeed: the gateway answers 503).
 */
export type JobOutcome = 'completed' | 'abandoned' | 'retried' | 'failed';

const JOB_OUTCOMES: readonly JobOutcome[] = ['completed', 'abandoned', 'retried', 'failed'];

export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

/** A scrape reading the queue's counts gives up after this long (a frozen Redis). */
export const QUEUE_COUNTS_TIMEOUT_MS = 1_000;

/** Seconds: a creation is a few milliseconds to CREATION_TIMEOUT_MS (10 s) plus its grace. */
const JOB_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Reads the queue's job counts by state, e.g. BullMQ's `Queue.getJobCounts`. */
export type JobCountsReader = (...states: QueueState[]) => Promise<Record<string, number>>;

/** When the oldest waiting job was added (epoch ms), or null when none waits. */
export type OldestWaitingReader = () => Promise<number | null>;

/**
 * The outcome of a finished attempt, from the processor's result or the error it threw. A group
 * job completed when it answered any of its requests with results, and was abandoned when it
 * created nothing for any of them.
 */
export function outcomeOf(
  job: Pick<Job, 'attemptsMade' | 'opts'>,
  result: { value: CreationJobReply } | { error: unknown },
): JobOutcome {
  if ('value' in result) {
    const reply = result.value;
    const done =
      // A one-request job's reply (pre-group-commit.compat.ts): goes in 0.3.0.
      'answers' in reply
        ? reply.answers.some(({ answer }) => answer.status === 'done')
        : reply.status === 'done';
    return done ? 'completed' : 'abandoned';
  }
  if (result.error instanceof UnrecoverableError) return 'failed';
  // attemptsMade counts the attempts that failed before this one.
  return job.attemptsMade + 1 < (job.opts.attempts ?? 1) ? 'retried' : 'failed';
}

/** The worker's Prometheus metrics, in the process' registry (served on METRICS_PORT). */
export class WorkerMetrics {
  readonly registry: Registry;
  /** The webhook delivery's, in the same registry. */
  readonly webhooks: WebhookMetrics;
  private readonly jobs: Counter<'outcome'>;
  private readonly jobDuration: Histogram<'outcome'>;
  private countsReader: JobCountsReader | undefined;
  private oldestWaitingReader: OldestWaitingReader | undefined;

  constructor(registry: Registry = createMetricsRegistry()) {
    this.registry = registry;
    this.webhooks = new WebhookMetrics(registry);
    this.jobs = new Counter({
      name: 'linkservice_creation_jobs_total',
      help: 'Attempts of create-links jobs, by outcome: completed, abandoned, retried, failed.',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.jobDuration = new Histogram({
      name: 'linkservice_creation_job_duration_seconds',
      help: 'How long one attempt of a create-links job ran in the worker, by outcome.',
      labelNames: ['outcome'],
      buckets: JOB_DURATION_BUCKETS,
      registers: [registry],
    });
    const reader = (): JobCountsReader | undefined => this.countsReader;
    // Registered, then read only by its collect callback at scrape time.
    new Gauge({
      name: 'linkservice_queue_jobs',
      help:
        'Jobs in the create-links queue by state, read from Redis at scrape time (absent when ' +
        `Redis did not answer within ${QUEUE_COUNTS_TIMEOUT_MS} ms).`,
      labelNames: ['state'],
      registers: [registry],
      async collect() {
        const read = reader();
        if (!read) return;
        const counts = await withinOr(read(...QUEUE_STATES), QUEUE_COUNTS_TIMEOUT_MS, null);
        this.reset();
        if (!counts) return;
        for (const state of QUEUE_STATES) this.labels(state).set(counts[state] ?? 0);
      },
    });
    const oldestReader = (): OldestWaitingReader | undefined => this.oldestWaitingReader;
    // The backlog's age, not its size, says whether creations answer in time: a job that waited
    // CREATION_TIMEOUT_MS is answered 503 however few wait beside it.
    new Gauge({
      name: 'linkservice_queue_oldest_waiting_seconds',
      help:
        'How long the oldest waiting create-links job has waited (0 when none waits), read from ' +
        `Redis at scrape time (NaN when Redis did not answer within ${QUEUE_COUNTS_TIMEOUT_MS} ms).`,
      registers: [registry],
      async collect() {
        const read = oldestReader();
        if (!read) return;
        const oldest = await withinOr(read(), QUEUE_COUNTS_TIMEOUT_MS, undefined);
        // A gauge without labels always has a sample: NaN (a gap, and no alert) says "unknown"
        // where 0 would say "nothing waits".
        if (oldest === undefined) this.set(Number.NaN);
        else this.set(oldest === null ? 0 : Math.max(0, (Date.now() - oldest) / 1000));
      },
    });
    // Every series exists from the start at 0, so rate() and alerts see the first increment.
    for (const outcome of JOB_OUTCOMES) {
      this.jobs.labels(outcome).inc(0);
      this.jobDuration.zero({ outcome });
    }
  }

  /**
   * Where `linkservice_queue_jobs` reads its counts, and `linkservice_queue_oldest_waiting_seconds`
   * its oldest waiting job, at each scrape.
   */
  readQueueFrom(reader: JobCountsReader, oldestWaiting?: OldestWaitingReader): void {
    this.countsReader = reader;
    this.oldestWaitingReader = oldestWaiting;
  }

  jobFinished(outcome: JobOutcome, seconds: number): void {
    this.jobs.labels(outcome).inc();
    this.jobDuration.labels(outcome).observe(seconds);
  }
}

/**
 * The create-links processor, measured: each attempt's outcome and duration. A wrapper, so the
 * job module stays about the job.
 */
export function measuredProcessor<A extends unknown[]>(
  processor: (job: Job, ...rest: A) => Promise<CreationJobReply>,
  metrics: WorkerMetrics,
): (job: Job, ...rest: A) => Promise<CreationJobReply> {
  return async (job, ...rest) => {
    const started = process.hrtime.bigint();
    try {
      const value = await processor(job, ...rest);
      metrics.jobFinished(outcomeOf(job, { value }), secondsSince(started));
      return value;
    } catch (error) {
      metrics.jobFinished(outcomeOf(job, { error }), secondsSince(started));
      throw error;
    }
  };
}

/**
 * The worker's metrics server on METRICS_PORT, and the queue `linkservice_queue_jobs` reads at
 * each scrape: a Queue on the probe's Redis client, which fails a command at once while Redis is
 * away (no offline queue) rather than holding the scrape. Call once Redis has answered (after
 * runService's wait for the dependencies), so the Queue starts on a connected client.
 */
export async function startWorkerMetrics(
  deps: Pick<WorkerDeps, 'config' | 'logger' | 'metrics' | 'probeRedis'>,
): Promise<MetricsServer> {
  const { config, logger, metrics } = deps;
  const queue = new Queue(CREATE_LINKS_QUEUE, {
    connection: deps.probeRedis,
    prefix: creationQueuePrefix(config.REDIS_PREFIX, deps.probeRedis.isCluster),
  });
  // One line per outage, not one per reconnect attempt (BullMQ re-emits each).
  queue.on('error', throttledErrorLog(logger, { message: 'queue metrics: redis error' }));
  metrics.readQueueFrom(
    (...states) => queue.getJobCounts(...states),
    // Oldest first (asc): one job of the wait list, its `timestamp` the time it was added.
    async () => (await queue.getJobs(['wait'], 0, 0, true)).at(0)?.timestamp ?? null,
  );
  const server = await startMetricsServer(metrics.registry, {
    port: config.METRICS_PORT,
    logger,
  });
  return {
    ...server,
    close: () => {
      server.close();
      // The connection is the probe's (closed with the other clients); this only detaches.
      void queue.close().catch(() => undefined);
    },
  };
}
