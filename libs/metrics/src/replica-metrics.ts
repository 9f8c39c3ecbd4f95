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
  /** Children bound once (`replica`, then `primary` per reason), not looked up per read. */
  private readonly children = new Map<string, Counter.Internal>();

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
    const reads = new Counter({
      name: 'linkservice_db_reads_total',
      help:
        'Reads that may go to the replica, by source (replica, primary) and, for the primary, ' +
        'reason: not_found (the replica missed, asked again), stale (behind the write fence), ' +
        'replica_failed, replica_down, no_fence (the fence store failed); none otherwise.',
      labelNames: ['source', 'reason'],
      registers: [registry],
    });
    // Every series exists from the start at 0, so rate() and alerts see the first increment.
    const bind = (source: ReadSource, reason: PrimaryReason | 'none') => {
      const child = reads.labels(source, reason);
      child.inc(0);
      this.children.set(`${source}:${reason}`, child);
    };
    bind('replica', 'none');
    bind('primary', 'none');
    for (const reason of PRIMARY_REASONS) bind('primary', reason);
  }

  /** Fits ReplicaReadsOptions.onRead. */
  readonly read = (source: ReadSource, reason?: PrimaryReason): void => {
    this.children.get(`${source}:${reason ?? 'none'}`)?.inc();
  };
}
