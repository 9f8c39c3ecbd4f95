import { Writable } from 'node:stream';
import type { CreateLinksJobResult } from '@linkservice/creation';
import { createLogger } from '@linkservice/logger';
import type { Job } from 'bullmq';
import { withCreationJobLog } from './creation-job-log';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger('worker', 'info', stream) };
}

const job = {
  id: 'crt_1',
  attemptsMade: 0,
  data: {
    requestId: 'crt_1',
    httpRequestId: 'req-abc',
    appId: 'app_1',
    environment: 'live',
    entries: [{ index: 0 }, { index: 1 }, { index: 2 }],
    entriesNote: 'never logged',
  },
} as unknown as Job;

const link = { id: 'lnk_1' } as never;

describe('withCreationJobLog', () => {
  it('writes one info line per job with the request, app, counts and duration', async () => {
    const { lines, logger } = capture();
    const result: CreateLinksJobResult = {
      status: 'done',
      result: {
        results: [
          { index: 0, ok: true, link },
          { index: 1, ok: false, error: 'validation_failed', message: 'alias taken' },
        ],
        stoppedEarly: { reason: 'rate_limited', atIndex: 1, message: 'm' },
      },
    };
    const processor = withCreationJobLog(() => Promise.resolve(result), logger);
    await expect(processor(job)).resolves.toBe(result);
    await new Promise(setImmediate);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'info',
      msg: 'creation job finished',
      // The X-Request-Id, as the gateway's line names it (reqId), beside the job id (jobId).
      reqId: 'req-abc',
      jobId: 'crt_1',
      appId: 'app_1',
      entries: 3,
      status: 'done',
      created: 1,
      failed: 1,
      stoppedEarly: 'rate_limited',
      attempt: 1,
    });
    expect(typeof lines[0]?.durationMs).toBe('number');
    expect(JSON.stringify(lines[0])).not.toContain('never logged');
  });

  it('logs an abandoned job with nothing created', async () => {
    const { lines, logger } = capture();
    const processor = withCreationJobLog(
      () => Promise.resolve({ status: 'abandoned', reason: 'deadline_passed' } as const),
      logger,
    );
    await processor(job);
    await new Promise(setImmediate);
    expect(lines[0]).toMatchObject({ status: 'abandoned', reason: 'deadline_passed', created: 0 });
  });

  it('writes no line for a thrown attempt (the processor and the failed listener log it)', async () => {
    const { lines, logger } = capture();
    const processor = withCreationJobLog(() => Promise.reject(new Error('rolled back')), logger);
    await expect(processor(job)).rejects.toThrow('rolled back');
    await new Promise(setImmediate);
    expect(lines).toHaveLength(0);
  });
});
