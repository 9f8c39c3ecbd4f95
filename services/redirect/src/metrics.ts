import type { Registry } from '@linkservice/metrics';
import { Counter, createMetricsRegistry, Gauge, HttpRequestMetrics } from '@linkservice/metrics';
import type { ClickCounter } from './clicks/click-counter';
import type { ClickFlusher } from './clicks/click-flusher';
import type { RedirectOutcome } from './links/redirect-rules';

/**
 * `linkservice_redirects_total{result}`: `redirect` (302 to the app's destination), `page` (a
 * 200 page for the link: a link preview, or the deferred deep-link page), `gone` (410, expired),
 * `not_found` (404, no such alias). Requests that could not be resolved (503) are only in the
 * HTTP histogram.
 */
export type RedirectResult = 'redirect' | 'page' | 'gone' | 'not_found';

export function redirectResultOf(kind: RedirectOutcome['kind']): RedirectResult {
  switch (kind) {
    case 'redirect':
      return 'redirect';
    case 'preview':
    case 'deferred_page':
      return 'page';
    case 'expired':
      return 'gone';
    case 'not_found':
      return 'not_found';
  }
}

/** Counts the link cache's answers; RedirectService reports each lookup. */
export interface LinkCacheStats {
  hit(): void;
  /** Resolved from Postgres: not cached, or Redis could not be asked (away, backing off). */
  miss(): void;
}

/**
 * A `result`-labelled Counter's collect(): hands it `counts`, kept as plain numbers, at scrape
 * time. Every key is a series from the start (0 until counted).
 */
function collectCounts(counts: Readonly<Record<string, number>>) {
  return function (this: Counter<'result'>): void {
    this.reset();
    for (const [result, count] of Object.entries(counts)) this.labels(result).inc(count);
  };
}

/**
 * The redirect's Prometheus metrics, in the process' registry (served on METRICS_PORT). On the
 * hot path (tens of thousands of requests a second) the counters are plain numbers, handed to
 * prom-client at scrape time (`collect`): prom-client's own `inc` validates and hashes the labels
 * on every call, even through a bound child.
 */
export class RedirectMetrics {
  readonly registry: Registry;
  readonly http: HttpRequestMetrics;
  readonly cache: LinkCacheStats;
  private readonly results: Record<RedirectResult, number> = {
    redirect: 0,
    page: 0,
    gone: 0,
    not_found: 0,
  };
  private readonly lookups = { hit: 0, miss: 0 };

  constructor(registry: Registry = createMetricsRegistry()) {
    this.registry = registry;
    this.http = new HttpRequestMetrics(registry);
    const results = this.results;
    // Every series exists from the start at 0, so rate() and alerts see the first increment.
    new Counter({
      name: 'linkservice_redirects_total',
      help: 'Link host answers for an alias, by result: redirect, page (preview or deferred page), gone, not_found.',
      labelNames: ['result'],
      registers: [registry],
      collect: collectCounts(results),
    });
    const lookups = this.lookups;
    new Counter({
      name: 'linkservice_link_cache_requests_total',
      help: 'Alias lookups by link cache result: hit, or miss (resolved from Postgres, Redis away included).',
      labelNames: ['result'],
      registers: [registry],
      collect: collectCounts(lookups),
    });
    this.cache = {
      hit: () => {
        lookups.hit += 1;
      },
      miss: () => {
        lookups.miss += 1;
      },
    };
  }

  redirected(kind: RedirectOutcome['kind']): void {
    this.results[redirectResultOf(kind)] += 1;
  }

  /**
   * The click pipeline's state, read at scrape time: `linkservice_clicks_pending{state}`,
   * `linkservice_click_flush_lag_seconds`, `linkservice_click_flush_fields`, `linkservice_click_flush_statements` and
   * `linkservice_clicks_dropped_total`.
   */
  watchClicks(clicks: ClickCounter, flusher: ClickFlusher): void {
    new Gauge({
      name: 'linkservice_clicks_pending',
      help:
        'Held in this process while Redis or Postgres cannot take them, by state: unrecorded ' +
        '(clicks Redis never took, waiting for a direct write to Postgres), uncertain (clicks ' +
        'whose Redis call may have run, waiting to be reconciled), untokened (click tokens of ' +
        'unrecorded clicks waiting for Redis). 0 while everything is healthy.',
      labelNames: ['state'],
      registers: [this.registry],
      collect() {
        this.labels('unrecorded').set(clicks.unrecordedCount + flusher.unsavedLocalClicks);
        this.labels('uncertain').set(clicks.uncertainCount);
        this.labels('untokened').set(clicks.untokenedCount);
      },
    });
    new Gauge({
      name: 'linkservice_click_flush_lag_seconds',
      help:
        'Seconds since the click flusher last completed a pass (every click counted before it ' +
        'is in Postgres), or since it started; about CLICK_FLUSH_INTERVAL_MS when healthy, ' +
        'growing while Redis or Postgres is away.',
      registers: [this.registry],
      collect() {
        this.set(flusher.lagSeconds());
      },
    });
    new Gauge({
      name: 'linkservice_click_flush_fields',
      help:
        "Fields of the pending-clicks hashes the last flush pass applied: a link's clicks, and " +
        'its clicks per hour and combination of analytics values.',
      registers: [this.registry],
      collect() {
        this.set(flusher.lastPass.fields);
      },
    });
    new Gauge({
      name: 'linkservice_click_flush_statements',
      help: 'Postgres statements the last flush pass took (at most 20,000 fields each).',
      registers: [this.registry],
      collect() {
        this.set(flusher.lastPass.statements);
      },
    });
    new Counter({
      name: 'linkservice_clicks_dropped_total',
      help:
        'Clicks dropped since start: uncertain whether Redis counted them, and too late (token ' +
        'expired, too many waiting, shutdown) to reconcile.',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(clicks.clicksDropped);
      },
    });
  }
}
