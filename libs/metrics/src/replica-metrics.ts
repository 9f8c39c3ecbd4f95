import type { Registry } from 'prom-client';
import { Counter, Gauge } from 'prom-client';

type ReadSource = 'replica' | 'primary';
type PrimaryReason = 'not_found' | 'stale' | 'replica_failed' | 'replica_down' | 'no_fence';

const PRIMARY_REASONS: readonly PrimaryReason[] = [
  'not_found',
  'stale',
  'replica_failed',
  'replica_down',
  'no_fence',
];

/**
 * The replica's metrics, for the services that read (gateway, redirect):
 * `linkservice_db_replica_lag_seconds` (polled, 0 without a replica) and
 * `linkservice_db_reads_total{source, reason}`: where each routed read was answered, and for the
 * primary why (reason `none` for replica answers, and for every read without DATABASE_READ_URL).
 */
export class ReplicaReadMetrics {
  private readonly reads: Counter<'source' | 'reason'>;

  constructor(registry: Registry, lagSeconds: () => number) {
    new Gauge({
      name: 'linkservice_db_replica_lag_seconds',
      help:
        'How far the read replica (DATABASE_READ_URL) is behind the primary, in seconds: now() - ' +
        'pg_last_xact_replay_timestamp() while it has WAL left to replay, else 0; 0 without a replica.',
      registers: [registry],
      collect() {
        this.set(lagSeconds());
      },
    });
    this.reads = new Counter({
      name: 'linkservice_db_reads_total',
      help:
        'Reads that may go to the replica, by source (replica, primary) and, for the primary, ' +
        'reason: not_found (the replica missed, asked again), stale (behind the write fence), ' +
        'replica_failed, replica_down, no_fence (the fence store failed); none otherwise.',
      labelNames: ['source', 'reason'],
      registers: [registry],
    });
    this.reads.labels('replica', 'none').inc(0);
    this.reads.labels('primary', 'none').inc(0);
    for (const reason of PRIMARY_REASONS) this.reads.labels('primary', reason).inc(0);
  }

  /** Fits ReplicaReadsOptions.onRead. */
  readonly read = (source: ReadSource, reason?: PrimaryReason): void => {
    this.reads.labels(source, reason ?? 'none').inc();
  };
}
