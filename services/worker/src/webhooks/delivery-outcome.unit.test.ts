import { STANDARD_RETRY_SCHEDULE_SECONDS } from '@linkservice/webhooks';
import { nextDeliveryState, outcomeOfStatus } from './delivery-outcome';

describe('outcomeOfStatus', () => {
  test.each([
    [200, 'succeeded'],
    [204, 'succeeded'],
    [299, 'succeeded'],
    [410, 'gone'],
    // Redirects are never followed: a failed attempt.
    [301, 'http_error'],
    [302, 'http_error'],
    [304, 'http_error'],
    [100, 'http_error'],
    [400, 'http_error'],
    [404, 'http_error'],
    [429, 'http_error'],
    [500, 'http_error'],
  ])('%i is %s', (status, outcome) => {
    expect(outcomeOfStatus(status)).toBe(outcome);
  });
});

describe('nextDeliveryState', () => {
  const schedule = [0, 0.2, 0.2, 0.2];

  test('a success delivers, at any attempt', () => {
    expect(nextDeliveryState('succeeded', 1, schedule)).toEqual({ status: 'delivered' });
    expect(nextDeliveryState('succeeded', 4, schedule)).toEqual({ status: 'delivered' });
  });

  test('a failure waits the next delay of the schedule, and fails once it ran out', () => {
    expect(nextDeliveryState('timeout', 1, schedule)).toEqual({
      status: 'pending',
      retryDelayMs: 200,
    });
    expect(nextDeliveryState('refused_address', 3, schedule)).toEqual({
      status: 'pending',
      retryDelayMs: 200,
    });
    expect(nextDeliveryState('http_error', 4, schedule)).toEqual({ status: 'failed' });
  });

  test('a 410 is retried like any failure (its endpoint is disabled meanwhile)', () => {
    expect(nextDeliveryState('gone', 1, schedule)).toEqual({
      status: 'pending',
      retryDelayMs: 200,
    });
  });

  test("Standard Webhooks' schedule: eight attempts over about 27 hours", () => {
    const delays: number[] = [];
    for (let attempt = 1; ; attempt += 1) {
      const next = nextDeliveryState('network_error', attempt, STANDARD_RETRY_SCHEDULE_SECONDS);
      if (next.status !== 'pending') {
        expect(next.status).toBe('failed');
        break;
      }
      delays.push(next.retryDelayMs / 1000);
    }
    expect(delays).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
  });
});
