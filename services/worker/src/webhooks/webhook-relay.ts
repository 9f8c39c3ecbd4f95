import type { Logger } from '@linkservice/logger';
import { throttledErrorLog } from '@linkservice/logger';
import { untraced } from '@linkservice/telemetry';
import type { JobsOptions, Queue } from 'bullmq';
import { DELIVERY_JOB_NAME } from './delivery-job.contract';
import type { RelayPass } from './relay-batches';
import { deliveryJobsOf, nextPassDelayMs } from './relay-batches';
import type { WebhookRelayRepository } from './webhook-relay.repository';
import type { WebhookMetrics } from './webhook.metrics';

/**
 * A delivery job's options. Removed once finished, so the same batch can be added again later
 * (its job id is the batch's). Retried a few times when the processor throws (Postgres away);
 * a job that still fails is dropped, and the relay's stale bound sends its deliveries again.
 */
export const DELIVERY_JOB_OPTIONS: JobsOptions = {
  attempts: 3,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: true,
  removeOnFail: true,
};

export interface WebhookRelayOptions {
  /** WEBHOOK_RELAY_INTERVAL_MS: the pause after a pass that was not full. */
  intervalMs: number;
  /** Deliveries claimed per pass at most. */
  claimLimit: number;
  /**
   * A delivery enqueued (or started) longer ago than this and still pending is claimed again:
   * its job was lost from Redis, or its worker died mid-attempt. Well above an attempt's
   * timeout, so a running attempt is not doubled.
   */
  staleAfterMs: number;
  /** No claim while the queue holds this many waiting jobs: the backlog stays in Postgres. */
  maxWaitingJobs: number;
  /** Deliveries per job at most. */
  maxPerJob: number;
}

export interface WebhookRelayDeps {
  repository: WebhookRelayRepository;
  queue: Pick<Queue, 'addBulk' | 'getWaitingCount'>;
  metrics: WebhookMetrics;
  logger: Logger;
}

/**
 * Moves due deliveries from the outbox tables into the delivery queue: each pass measures the
 * backlog, claims what is due and first in line (WebhookRelayRepository.claimDue, one
 * statement) and adds their jobs. Passes follow each other every WEBHOOK_RELAY_INTERVAL_MS, at
 * once after a full one, and at once when woken (a delivery succeeded: the next of its subject
 * is due now). Every worker runs one; SKIP LOCKED keeps them apart.
 */
export class WebhookRelay {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private wakeRequested = false;
  private stopped = false;
  private readonly logError: (error: unknown) => void;

  constructor(
    private readonly deps: WebhookRelayDeps,
    private readonly options: WebhookRelayOptions,
  ) {
    this.logError = throttledErrorLog(deps.logger, { message: 'webhook relay pass failed' });
  }

  start(): void {
    this.schedule(0);
  }

  /** Runs a pass at once (after the one running, if any). */
  wake(): void {
    if (this.stopped) return;
    if (this.running) this.wakeRequested = true;
    else this.schedule(0);
  }

  /** No pass after this; waits for the one running. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass: measure, claim, enqueue. Never throws (a failure is logged and retried). */
  async pass(): Promise<RelayPass> {
    const { repository, queue, metrics } = this.deps;
    const { claimLimit, staleAfterMs, maxWaitingJobs, maxPerJob } = this.options;
    try {
      metrics.backlogMeasured(await repository.oldestDueAgeSeconds());
      if ((await queue.getWaitingCount()) >= maxWaitingJobs) return { kind: 'queue_full' };
      const claimed = await repository.claimDue(claimLimit, staleAfterMs);
      if (claimed.length > 0) {
        // Should this fail, the claimed deliveries are sent after the stale bound.
        await queue.addBulk(
          deliveryJobsOf(claimed, maxPerJob).map(({ jobId, data }) => ({
            name: DELIVERY_JOB_NAME,
            data,
            opts: { ...DELIVERY_JOB_OPTIONS, jobId },
          })),
        );
      }
      return { kind: 'claimed', count: claimed.length };
    } catch (error) {
      this.logError(error);
      return { kind: 'failed' };
    }
  }

  private schedule(delayMs: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.run();
    }, delayMs);
    // The Worker keeps the process alive; a relay alone must not (tests, shutdown).
    this.timer.unref();
  }

  private run(): void {
    if (this.stopped || this.running) return;
    // Outside any trace: a pass every WEBHOOK_RELAY_INTERVAL_MS would bury the traces that
    // matter (each attempt's, in its event's trace) under its statements.
    this.running = untraced(async () => {
      const pass = await this.pass();
      this.running = undefined;
      if (this.stopped) return;
      const woken = this.wakeRequested;
      this.wakeRequested = false;
      this.schedule(
        woken ? 0 : nextPassDelayMs(pass, this.options.claimLimit, this.options.intervalMs),
      );
    });
  }
}
