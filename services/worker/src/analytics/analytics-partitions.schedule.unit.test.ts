import type { EnsuredMonths } from './analytics-partitions.repository';
import { scheduleAnalyticsPartitions } from './analytics-partitions.schedule';

function recordingLogger() {
  const lines: { level: string; fields: object; message: string }[] = [];
  const logger = {
    info: (fields: object, message: string) => lines.push({ level: 'info', fields, message }),
    warn: (fields: object, message: string) => lines.push({ level: 'warn', fields, message }),
  };
  return { lines, logger: logger as never };
}

describe('scheduleAnalyticsPartitions', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    jest.useRealTimers();
  });

  it('ensures the months at once and on every interval, never two runs at a time, and logs counts', async () => {
    const { lines, logger } = recordingLogger();
    const calls: Date[] = [];
    let release: ((result: EnsuredMonths) => void) | undefined;
    const partitions = {
      ensureMonths: (now: Date) => {
        calls.push(now);
        return new Promise<EnsuredMonths>((resolve) => (release = resolve));
      },
    };
    let clock = 0;
    const schedule = scheduleAnalyticsPartitions(partitions, logger, {
      intervalMs: 10,
      now: () => new Date(clock),
    });
    expect(calls).toEqual([new Date(0)]);
    // Intervals pass while the first run is held: none starts beside it.
    jest.advanceTimersByTime(50);
    expect(calls).toHaveLength(1);
    release?.({ created: 2, moved: 7, busy: 1 });
    await jest.advanceTimersByTimeAsync(0);
    expect(lines).toEqual([
      { level: 'info', fields: { created: 2, moved: 7 }, message: 'created analytics partitions' },
    ]);

    clock = 1_000;
    jest.advanceTimersByTime(10);
    expect(calls).toEqual([new Date(0), new Date(1_000)]);
    // Nothing created: nothing logged.
    release?.({ created: 0, moved: 0, busy: 0 });
    await jest.advanceTimersByTimeAsync(0);
    expect(lines).toHaveLength(1);

    // stop() waits for the run in progress, and no run starts after it.
    jest.advanceTimersByTime(10);
    expect(calls).toHaveLength(3);
    let stopped = false;
    const stopping = schedule.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    release?.({ created: 0, moved: 0, busy: 0 });
    await stopping;
    jest.advanceTimersByTime(100);
    expect(calls).toHaveLength(3);
  });

  it('logs a failed run and retries on the next interval', async () => {
    const { lines, logger } = recordingLogger();
    let calls = 0;
    const partitions = {
      ensureMonths: () =>
        ++calls === 1
          ? Promise.reject(new Error('lock timeout'))
          : Promise.resolve({ created: 1, moved: 0, busy: 0 }),
    };
    const schedule = scheduleAnalyticsPartitions(partitions, logger, { intervalMs: 10 });
    await jest.advanceTimersByTimeAsync(0);
    expect(lines.map((line) => [line.level, line.message])).toEqual([
      ['warn', 'analytics partitions upkeep failed; will retry'],
    ]);
    await jest.advanceTimersByTimeAsync(10);
    expect(calls).toBe(2);
    expect(lines[1]).toMatchObject({ level: 'info', fields: { created: 1, moved: 0 } });
    await schedule.stop();
  });
});
