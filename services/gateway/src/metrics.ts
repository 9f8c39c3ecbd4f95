import type { UnavailableReason } from '@linkservice/creation';
import type { Registry } from '@linkservice/metrics';
import { Counter, createMetricsRegistry, HttpRequestMetrics } from '@linkservice/metrics';

/** Which limit answered a 429: the hourly creation limit or the SDK's abuse limit. */
export type RateLimit = 'creation' | 'sdk';

const UNAVAILABLE_REASONS: readonly UnavailableReason[] = [
  'timeout',
  'queue_unreachable',
  'worker_failed',
  'database_unreachable',
];

/**
 * The gateway's Prometheus metrics, in the process' registry (served on METRICS_PORT). No label
 * names an app, key, link or install: each has a small closed set of values.
 */
export class GatewayMetrics {
  readonly registry: Registry;
  readonly http: HttpRequestMetrics;
  private readonly creationTimeouts: Counter<'reason'>;
  private readonly rateLimited: Counter<'limit'>;

  constructor(registry: Registry = createMetricsRegistry()) {
    this.registry = registry;
    this.http = new HttpRequestMetrics(registry);
    this.creationTimeouts = new Counter({
      name: 'linkservice_creation_timeouts_total',
      help:
        'Creations (single or batch) answered 503 with nothing created, by reason: timeout (no ' +
        'answer from the worker in CREATION_TIMEOUT_MS), queue_unreachable, worker_failed, ' +
        'database_unreachable.',
      labelNames: ['reason'],
      registers: [registry],
    });
    this.rateLimited = new Counter({
      name: 'linkservice_rate_limited_total',
      help: 'Requests answered 429, by limit: creation (per app per hour) or sdk (per key and address).',
      labelNames: ['limit'],
      registers: [registry],
    });
    // Every series exists from the start at 0, so rate() and alerts see the first increment.
    for (const reason of UNAVAILABLE_REASONS) this.creationTimeouts.labels(reason).inc(0);
    for (const limit of ['creation', 'sdk'] as const) this.rateLimited.labels(limit).inc(0);
  }

  creationUnavailable(reason: UnavailableReason): void {
    this.creationTimeouts.labels(reason).inc();
  }

  rateLimit(limit: RateLimit): void {
    this.rateLimited.labels(limit).inc();
  }
}
