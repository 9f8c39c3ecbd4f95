import type { z } from 'zod';
import {
  baseEnvSchema,
  nonNegativeInt,
  ownMetricsPort,
  parseEnv,
  port,
  positiveInt,
  withOwnMetricsPort,
} from '@linkservice/config';
import { IDEMPOTENCY_KEY_TTL_HOURS } from '@linkservice/creation';
import { retrySchedule, webhookSharedEnv } from '@linkservice/webhooks';

export const workerEnvSchema = baseEnvSchema
  .extend({
    /**
     * The worker's own defaults for the pool bounds (baseEnvSchema). Client side: longer than
     * any creation transaction may last (the job's deadline plus COMMIT_GRACE_MS, about
     * CREATION_TIMEOUT_MS + 1 s; raise it with a CREATION_TIMEOUT_MS past ~25 s), so it only ends
     * a query a frozen server will never answer, and the worker recovers without a restart.
     * Server side: none by default, since each creation transaction sets its own with SET LOCAL
     * and the cleanups delete bounded slices.
     */
    DATABASE_QUERY_TIMEOUT_MS: nonNegativeInt(30_000),
    DATABASE_STATEMENT_TIMEOUT_MS: nonNegativeInt(0),
    /** /healthz and /readyz. */
    WORKER_HEALTH_PORT: port(8082),
    /** Prometheus' scrape target: `GET /metrics` on this port of its own (0: any free port). */
    METRICS_PORT: port(9465),
    /** Wins over METRICS_PORT (withOwnMetricsPort): one port each for the services of `pnpm start`. */
    WORKER_METRICS_PORT: ownMetricsPort,
    /** Creation jobs run at once per process. Jobs of one app still serialise on its row lock. */
    WORKER_CONCURRENCY: positiveInt(8),
    /** Finished jobs kept in Redis for inspection: the newest N, and none older than the age. */
    WORKER_KEEP_COMPLETED_JOBS: nonNegativeInt(1_000),
    WORKER_KEEP_COMPLETED_SECONDS: positiveInt(3_600),
    WORKER_KEEP_FAILED_JOBS: nonNegativeInt(5_000),
    WORKER_KEEP_FAILED_SECONDS: positiveInt(7 * 24 * 3_600),
    /**
     * creation_requests rows older than this are deleted. They only matter while their job can
     * still be delivered, which ends at its deadline (seconds after creation), and while an
     * Idempotency-Key naming them is kept (24 hours): a retry settles its key's creation request
     * through this row, so the retention may not be shorter than that.
     */
    CREATION_REQUESTS_RETENTION_HOURS: positiveInt(24),
    CREATION_REQUESTS_CLEANUP_INTERVAL_MS: positiveInt(10 * 60_000),
    /**
     * installs rows (and, by cascade, the click each matched) older than this are deleted: an
     * installation that never erased itself is forgotten after this many days.
     */
    INSTALL_RETENTION_DAYS: positiveInt(90),
    INSTALL_RETENTION_INTERVAL_MS: positiveInt(60 * 60_000),
    /**
     * Click analytics kept (the click-analytics migration): hourly rollups (click_rollup_hours)
     * this many days, the daily ones (click_rollup_days, click_dimension_days, link_click_days)
     * and the monthly totals (link_click_months) this many. Whole months go as partitions, the
     * month straddling the cutoff in slices. A daily answer over a range the hourly rows no
     * longer cover reads the daily rows, so those may not be kept shorter.
     */
    ANALYTICS_HOURLY_RETENTION_DAYS: positiveInt(90),
    ANALYTICS_DAILY_RETENTION_DAYS: positiveInt(800),
    ...webhookSharedEnv,
    /** Seconds before each delivery attempt (Standard Webhooks' schedule; tests shorten it). */
    WEBHOOK_RETRY_SCHEDULE: retrySchedule,
    /** A delivery attempt's whole bound: connect, send, and the answer's status line. */
    WEBHOOK_TIMEOUT_MS: positiveInt(10_000),
    /** Delivery attempts in flight at once per process. */
    WEBHOOK_CONCURRENCY: positiveInt(32),
    /** How often the relay looks for due deliveries when the last look found none. */
    WEBHOOK_RELAY_INTERVAL_MS: positiveInt(250),
    /**
     * Finished deliveries (and their attempts) are kept this many days for GET
     * /webhooks/{id}/deliveries and retries, then deleted with their events.
     */
    WEBHOOK_RETENTION_DAYS: positiveInt(30),
    /** After SIGTERM: how long in-flight jobs may take before the process exits anyway. */
    SHUTDOWN_GRACE_MS: positiveInt(15_000),
    /**
     * TEST ONLY (NODE_ENV=test): sleeps this long inside each creation transaction, after the
     * claim, so crash tests can kill the worker mid-batch. Must stay 0 anywhere else.
     */
    WORKER_TEST_DELAY_MS: nonNegativeInt(0),
  })
  .refine((env) => env.CREATION_REQUESTS_RETENTION_HOURS >= IDEMPOTENCY_KEY_TTL_HOURS, {
    path: ['CREATION_REQUESTS_RETENTION_HOURS'],
    error: `must be at least ${IDEMPOTENCY_KEY_TTL_HOURS}: an Idempotency-Key is settled through its creation request for that long`,
  })
  .refine((env) => env.ANALYTICS_DAILY_RETENTION_DAYS >= env.ANALYTICS_HOURLY_RETENTION_DAYS, {
    path: ['ANALYTICS_DAILY_RETENTION_DAYS'],
    error: 'must be at least ANALYTICS_HOURLY_RETENTION_DAYS: daily rollups outlive hourly ones',
  })
  .refine((env) => env.WORKER_TEST_DELAY_MS === 0 || env.NODE_ENV === 'test', {
    path: ['WORKER_TEST_DELAY_MS'],
    error: 'is a test-only setting: allowed only with NODE_ENV=test',
  });

export type WorkerConfig = z.infer<typeof workerEnvSchema>;

export function loadConfig(env: Record<string, string | undefined> = process.env): WorkerConfig {
  const config = parseEnv(workerEnvSchema, env);
  return withOwnMetricsPort(config, config.WORKER_METRICS_PORT);
}
