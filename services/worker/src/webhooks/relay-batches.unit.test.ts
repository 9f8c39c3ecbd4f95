import { deliveryJobId, deliveryJobSchema } from './delivery-job.contract';
import type { ClaimedDelivery } from './relay-batches';
import { deliveryJobsOf, nextPassDelayMs } from './relay-batches';

const id = (n: number): string => `dlv_${n.toString(16).padStart(32, '0')}`;
const claimed = (n: number, endpointId: string, attempts = 0): ClaimedDelivery => ({
  id: id(n),
  attempts,
  endpointId,
});

describe('deliveryJobsOf', () => {
  test('one endpoint per job, in claimed order, at most maxPerJob each, at the next attempt', () => {
    const jobs = deliveryJobsOf(
      [claimed(1, 'a'), claimed(2, 'b', 3), claimed(3, 'a'), claimed(4, 'a', 1)],
      2,
    );
    expect(jobs.map((job) => job.data)).toEqual([
      {
        deliveries: [
          { deliveryId: id(1), attempt: 1 },
          { deliveryId: id(3), attempt: 1 },
        ],
      },
      { deliveries: [{ deliveryId: id(4), attempt: 2 }] },
      { deliveries: [{ deliveryId: id(2), attempt: 4 }] },
    ]);
    for (const job of jobs) {
      expect(deliveryJobSchema.parse(job.data)).toEqual(job.data);
      expect(job.jobId).toBe(deliveryJobId(job.data));
    }
  });

  test('nothing claimed, no job', () => {
    expect(deliveryJobsOf([], 50)).toEqual([]);
  });
});

describe('deliveryJobId', () => {
  test('the same deliveries at the same attempts: the same id, in any order', () => {
    const one = {
      deliveries: [
        { deliveryId: id(1), attempt: 1 },
        { deliveryId: id(2), attempt: 1 },
      ],
    };
    const swapped = { deliveries: [...one.deliveries].reverse() };
    expect(deliveryJobId(one)).toBe(deliveryJobId(swapped));
    expect(deliveryJobId(one)).toMatch(/^dlv-[0-9a-f]{32}$/);
  });

  test('another attempt or another delivery: another id', () => {
    const base = deliveryJobId({ deliveries: [{ deliveryId: id(1), attempt: 1 }] });
    expect(deliveryJobId({ deliveries: [{ deliveryId: id(1), attempt: 2 }] })).not.toBe(base);
    expect(deliveryJobId({ deliveries: [{ deliveryId: id(2), attempt: 1 }] })).not.toBe(base);
  });
});

describe('deliveryJobSchema', () => {
  test('refuses anything but delivery ids and attempts', () => {
    expect(deliveryJobSchema.safeParse({ deliveries: [] }).success).toBe(false);
    expect(
      deliveryJobSchema.safeParse({ deliveries: [{ deliveryId: 'lnk_1', attempt: 1 }] }).success,
    ).toBe(false);
    expect(
      deliveryJobSchema.safeParse({ deliveries: [{ deliveryId: id(1), attempt: 0 }] }).success,
    ).toBe(false);
  });
});

describe('nextPassDelayMs', () => {
  test('at once after a full pass, else the interval', () => {
    expect(nextPassDelayMs({ kind: 'claimed', count: 200 }, 200, 250)).toBe(0);
    expect(nextPassDelayMs({ kind: 'claimed', count: 199 }, 200, 250)).toBe(250);
    expect(nextPassDelayMs({ kind: 'claimed', count: 0 }, 200, 250)).toBe(250);
    expect(nextPassDelayMs({ kind: 'queue_full' }, 200, 250)).toBe(250);
    expect(nextPassDelayMs({ kind: 'failed' }, 200, 250)).toBe(250);
  });
});
