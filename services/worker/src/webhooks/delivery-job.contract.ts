import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * The webhook delivery queue's contract. The relay (webhook-relay.ts) is its producer and the
 * delivery processor its consumer, both in the worker. A job names deliveries and the attempt
 * each is at, nothing else: no URL, no secret, no payload. The processor reads those from
 * Postgres when it runs, so a job that outlived a secret's rotation or an endpoint's disabling
 * sends what holds now.
 */
export const WEBHOOK_DELIVERIES_QUEUE = 'webhook-deliveries';

/**
 * The BullMQ prefix of the delivery queue, as creationQueuePrefix for the creation queue: on
 * Redis Cluster `<REDIS_PREFIX>:{webhook-deliveries}`, so every key of the queue shares one
 * hash tag (BullMQ's scripts touch several at once); on a single Redis REDIS_PREFIX itself.
 */
export function deliveryQueuePrefix(redisPrefix: string, cluster: boolean): string {
  return cluster ? `${redisPrefix}:{${WEBHOOK_DELIVERIES_QUEUE}}` : redisPrefix;
}

/** A job carries at most this many deliveries, all to one endpoint. */
export const MAX_DELIVERIES_PER_JOB = 50;

export const deliveryJobSchema = z.object({
  deliveries: z
    .array(
      z.object({
        deliveryId: z.string().regex(/^dlv_[0-9a-f]{32}$/),
        /** Which attempt this is, from 1: the delivery had `attempt - 1` before it. */
        attempt: z.number().int().positive(),
      }),
    )
    .min(1)
    .max(MAX_DELIVERIES_PER_JOB),
});

export type DeliveryJob = z.infer<typeof deliveryJobSchema>;
export type JobDelivery = DeliveryJob['deliveries'][number];

export const DELIVERY_JOB_NAME = 'deliver';

/**
 * The job id of a batch: the same deliveries at the same attempts give the same id, so adding a
 * batch again (a relay pass retried after Redis answered late) adds nothing while the first
 * is still in the queue. Another attempt is another id.
 */
export function deliveryJobId(job: DeliveryJob): string {
  const key = job.deliveries
    .map(({ deliveryId, attempt }) => `${deliveryId}/${attempt}`)
    .sort()
    .join(',');
  return `dlv-${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}
