import { eventually } from '@linkservice/testing';
import { scheduleRetention } from './retention';

/** The log lines a schedule wrote, as `level message {fields}`. */
function recordingLogger() {
  const lines: string[] = [];
  const write =
    (level: string) =>
    (fields: unknown, message: string): void => {
      lines.push(`${level} ${message} ${JSON.stringify(fields)}`);
    };
  return { lines, logger: { info: write('info'), warn: write('warn') } as never };
}

/** A table of `rows` rows past retention, deleted `limit` at a time. */
function fakeTable(rows: number) {
  const limits: number[] = [];
  return {
    limits,
    left: () => rows,
    deleteSlice: (limit: number) => {
      limits.push(limit);
      const deleted = Math.min(limit, rows);
      rows -= deleted;
      return Promise.resolve(deleted);
    },
  };
}

describe('scheduleRetention', () => {
  it('deletes slice after slice at once until one comes back short, and logs the total once', async () => {
    const table = fakeTable(7);
    const { lines, logger } = recordingLogger();
    const schedule = scheduleRetention(
      { label: 'things', deleteSlice: table.deleteSlice, intervalMs: 60_000, sliceSize: 3 },
      logger,
    );
    await eventually(() => table.left() === 0, { what: 'every row deleted' });
    await schedule.stop();
    expect(table.limits).toEqual([3, 3, 3]);
    expect(lines).toEqual(['info deleted old things {"deleted":7}']);
  });

  it('runs an extra slice when the rows divide evenly, and logs nothing when none were due', async () => {
    const table = fakeTable(6);
    const { lines, logger } = recordingLogger();
    const task = {
      label: 'things',
      deleteSlice: table.deleteSlice,
      intervalMs: 60_000,
      sliceSize: 3,
    };
    const first = scheduleRetention(task, logger);
    await eventually(() => table.limits.length === 3, { what: 'the short slice' });
    await first.stop();
    const second = scheduleRetention(task, logger);
    await eventually(() => table.limits.length === 4, { what: 'the next run' });
    await second.stop();
    expect(table.limits).toEqual([3, 3, 3, 3]);
    expect(lines).toEqual(['info deleted old things {"deleted":6}']);
  });

  it('uses slices of 5,000 unless told otherwise', async () => {
    const table = fakeTable(1);
    const { logger } = recordingLogger();
    await scheduleRetention(
      { label: 'things', deleteSlice: table.deleteSlice, intervalMs: 60_000 },
      logger,
    ).stop();
    expect(table.limits).toEqual([5_000]);
  });

  it('logs a failed run and retries it at the next interval', async () => {
    const { lines, logger } = recordingLogger();
    let calls = 0;
    const schedule = scheduleRetention(
      {
        label: 'things',
        deleteSlice: () =>
          ++calls === 1 ? Promise.reject(new Error('db away')) : Promise.resolve(0),
        intervalMs: 10,
      },
      logger,
    );
    await eventually(() => calls >= 2, { what: 'a second run' });
    await schedule.stop();
    expect(lines[0]).toMatch(/^warn things cleanup failed; will retry \{"err":/);
    expect(lines).toHaveLength(1);
  });

  describe('with fake timers', () => {
    beforeEach(() => {
      jest.useFakeTimers();
    });
    afterEach(() => {
      jest.useRealTimers();
    });

    it('never overlaps runs, and stop waits for the run in progress to end after its slice', async () => {
      const { logger } = recordingLogger();
      let slices = 0;
      let release: (() => void) | undefined;
      const schedule = scheduleRetention(
        {
          label: 'things',
          // Every slice is full, so only stop() ends the run; each waits to be released.
          deleteSlice: async (limit) => {
            slices++;
            await new Promise<void>((resolve) => (release = resolve));
            return limit;
          },
          intervalMs: 5,
          sliceSize: 2,
        },
        logger,
      );
      expect(slices).toBe(1);
      // Ten intervals pass while the slice is held: no second run starts beside it.
      jest.advanceTimersByTime(50);
      expect(slices).toBe(1);

      let stopped = false;
      const stopping = schedule.stop().then(() => (stopped = true));
      await Promise.resolve();
      expect(stopped).toBe(false);
      release?.();
      await stopping;
      jest.advanceTimersByTime(50);
      expect(slices).toBe(1);
    });
  });
});
