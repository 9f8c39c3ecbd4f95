import { Registry } from 'prom-client';
import { ReplicaReadMetrics } from './replica-metrics';

describe('ReplicaReadMetrics', () => {
  it('counts reads by source and reason, every series from 0, and reads the lag at each scrape', async () => {
    const registry = new Registry();
    let lag = 0;
    const metrics = new ReplicaReadMetrics(registry, () => lag);
    metrics.read('replica');
    metrics.read('primary', 'stale');
    metrics.read('primary', 'stale');
    lag = 2.5;
    const text = await registry.metrics();
    expect(text).toContain('linkservice_db_reads_total{source="replica",reason="none"} 1');
    expect(text).toContain('linkservice_db_reads_total{source="primary",reason="stale"} 2');
    expect(text).toContain('linkservice_db_reads_total{source="primary",reason="not_found"} 0');
    expect(text).toContain('linkservice_db_replica_lag_seconds 2.5');
  });
});
