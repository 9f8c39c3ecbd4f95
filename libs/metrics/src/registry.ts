import { collectDefaultMetrics, Registry } from 'prom-client';

/**
 * One per process, built by the service's composition root (deps.ts) so every metric of the
 * process lands in it; never prom-client's global registry, so in-process tests that build
 * several services never share (or double-register) a metric.
 */
export function createMetricsRegistry(): Registry {
  return new Registry();
}

const withDefaults = new WeakSet<Registry>();

/**
 * Node's process metrics (CPU, memory, handles, GC durations, event-loop lag) in `registry`,
 * collected at scrape time. Once per registry: the metrics server adds them when it starts, so
 * only a real process pays for the event-loop and GC monitors, not every in-process test.
 */
export function collectProcessMetrics(registry: Registry): void {
  if (withDefaults.has(registry)) return;
  withDefaults.add(registry);
  collectDefaultMetrics({ register: registry });
}
