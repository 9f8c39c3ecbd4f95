import type { Registry } from '@linkservice/metrics';
import { Counter, Gauge, Histogram } from '@linkservice/metrics';
import type { WebhookDisabledReason } from '@linkservice/db';
import type { AttemptOutcome } from './delivery-outcome';
import { ATTEMPT_OUTCOMES } from './delivery-outcome';

/** Seconds: most receivers answer in well under a second; WEBHOOK_TIMEOUT_MS (10 s) bounds all. */
const ATTEMPT_DURATION_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15];

/** The reasons the worker disables an endpoint for (`requested` is its owner's, via the API). */
const WORKER_DISABLED_REASONS: readonly WebhookDisabledReason[] = ['gone', 'failing'];

/**
 * The webhook delivery's metrics, in the worker's registry. Labels are closed sets (outcomes,
 * reasons): never an endpoint, app or URL.
 */
export class WebhookMetrics {
  private readonly attempts: Counter<'outcome'>;
  private readonly attemptDuration: Histogram;
  private readonly backlogAge: Gauge;
  private readonly endpointsDisabled: Counter<'reason'>;

  constructor(registry: Registry) {
    this.attempts = new Counter({
      name: 'linkservice_webhook_attempts_total',
      help:
        'Webhook delivery attempts, by outcome: succeeded, http_error, gone, timeout, ' +
        'network_error, refused_address, unresolvable.',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.attemptDuration = new Histogram({
      name: 'linkservice_webhook_attempt_duration_seconds',
      help: 'How long one webhook delivery attempt took: resolving, connecting, sending, answer.',
      buckets: ATTEMPT_DURATION_BUCKETS,
      registers: [registry],
    });
    // The age, not the count: a backlog of one event that waits an hour is the one to alert on.
    this.backlogAge = new Gauge({
      name: 'linkservice_webhook_backlog_age_seconds',
      help:
        'How long the oldest due pending delivery of an enabled endpoint has been due (0 when ' +
        "none), measured by this worker's relay at each pass.",
      registers: [registry],
    });
    this.endpointsDisabled = new Counter({
      name: 'linkservice_webhook_endpoints_disabled_total',
      help: 'Webhook endpoints this worker disabled, by reason: gone (a 410), failing (5 days).',
      labelNames: ['reason'],
      registers: [registry],
    });
    for (const outcome of ATTEMPT_OUTCOMES) this.attempts.labels(outcome).inc(0);
    for (const reason of WORKER_DISABLED_REASONS) this.endpointsDisabled.labels(reason).inc(0);
    this.backlogAge.set(0);
  }

  attempted(outcome: AttemptOutcome, seconds: number): void {
    this.attempts.labels(outcome).inc();
    this.attemptDuration.observe(seconds);
  }

  backlogMeasured(ageSeconds: number): void {
    this.backlogAge.set(Math.max(0, ageSeconds));
  }

  endpointDisabled(reason: WebhookDisabledReason): void {
    this.endpointsDisabled.labels(reason).inc();
  }
}
