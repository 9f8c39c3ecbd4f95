import type { DeliveryJob } from './delivery-job.contract';
import { deliveryJobId } from './delivery-job.contract';

/** A delivery the relay claimed: what its job needs to name it and its attempt. */
export interface ClaimedDelivery {
  id: string;
  /** Attempts made so far; the job's is the next. */
  attempts: number;
  endpointId: string;
}

export interface PlannedJob {
  jobId: string;
  data: DeliveryJob;
}

/**
 * The jobs a relay pass adds for what it claimed: one endpoint's deliveries per job (a job's
 * attempts go to one receiver, and one slow receiver holds up only its own jobs), at most
 * `maxPerJob` each, in the claimed order (oldest due first).
 */
export function deliveryJobsOf(
  claimed: readonly ClaimedDelivery[],
  maxPerJob: number,
): PlannedJob[] {
  const byEndpoint = new Map<string, ClaimedDelivery[]>();
  for (const delivery of claimed) {
    const list = byEndpoint.get(delivery.endpointId);
    if (list) list.push(delivery);
    else byEndpoint.set(delivery.endpointId, [delivery]);
  }
  const jobs: PlannedJob[] = [];
  for (const deliveries of byEndpoint.values()) {
    for (let start = 0; start < deliveries.length; start += maxPerJob) {
      const data: DeliveryJob = {
        deliveries: deliveries
          .slice(start, start + maxPerJob)
          .map(({ id, attempts }) => ({ deliveryId: id, attempt: attempts + 1 })),
      };
      jobs.push({ jobId: deliveryJobId(data), data });
    }
  }
  return jobs;
}

/** What a relay pass did, which decides when the next one runs. */
export type RelayPass =
  /** Claimed this many (0: nothing was due). */
  | { kind: 'claimed'; count: number }
  /** The queue already holds enough waiting jobs: nothing claimed, the backlog stays in Postgres. */
  | { kind: 'queue_full' }
  | { kind: 'failed' };

/**
 * The delay before the next pass: at once after a full claim (more is likely due), else the
 * interval. A woken relay (a delivery succeeded, so the next of its subject is due) runs at
 * once whatever this says.
 */
export function nextPassDelayMs(pass: RelayPass, claimLimit: number, intervalMs: number): number {
  return pass.kind === 'claimed' && pass.count >= claimLimit ? 0 : intervalMs;
}
