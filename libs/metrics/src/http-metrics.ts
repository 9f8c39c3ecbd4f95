import { Histogram } from 'prom-client';
import type { Registry } from 'prom-client';

/**
 * Seconds. Prometheus' defaults plus 1 ms and 2.5 ms: a redirect served from the link cache takes
 * about a millisecond, a creation up to CREATION_TIMEOUT_MS (10 s).
 */
export const HTTP_DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** The label a route with no match gets (an unknown path), whatever its status. */
export const UNMATCHED_ROUTE = 'unmatched';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** node only parses methods it knows, but there are ~30 of those: the rare ones share `other`. */
export function methodLabel(method: string | undefined): string {
  return method !== undefined && METHODS.has(method) ? method : 'other';
}

type Child = Histogram.Internal<'route' | 'method' | 'status'>;

/**
 * `http_server_request_duration_seconds{route, method, status}`. `route` must come from a closed
 * set (a route pattern such as `/api/v1/links/:linkId`, a probe path, UNMATCHED_ROUTE), never a
 * raw path: one series per link would be a cardinality and privacy leak at once.
 *
 * On the redirect's hot path: each (route, method, status) child is looked up once and then kept
 * in nested maps, so a request costs three map reads and prom-client's observe, not a
 * `labels()` call (label validation and an object per call) as well.
 */
export class HttpRequestMetrics {
  private readonly histogram: Histogram<'route' | 'method' | 'status'>;
  private readonly children = new Map<string, Map<string, Map<number, Child>>>();

  constructor(registry: Registry) {
    this.histogram = new Histogram({
      name: 'http_server_request_duration_seconds',
      help: 'Duration of HTTP requests served, by route pattern, method and status.',
      labelNames: ['route', 'method', 'status'],
      buckets: HTTP_DURATION_BUCKETS,
      registers: [registry],
    });
  }

  observe(route: string, method: string, status: number, seconds: number): void {
    let byMethod = this.children.get(route);
    if (!byMethod) {
      byMethod = new Map();
      this.children.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (!byStatus) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let child = byStatus.get(status);
    if (!child) {
      child = this.histogram.labels(route, method, String(status));
      byStatus.set(status, child);
    }
    child.observe(seconds);
  }
}

/** Seconds since `startedNs`, a `process.hrtime.bigint()` reading. */
export function secondsSince(startedNs: bigint): number {
  return Number(process.hrtime.bigint() - startedNs) / 1e9;
}
