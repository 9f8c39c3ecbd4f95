import type { CreateLinksJobResult, CreateLinksPayload } from '@linkservice/creation';
import { logCreationRequest } from './creation-job-log';
import { loggerToLines } from './testing/log-lines';

const request = {
  requestId: 'crt_1',
  httpRequestId: 'req-abc',
  appId: 'app_1',
  environment: 'live',
  entries: [
    { index: 0, draft: { title: 'never logged' } },
    { index: 1, draft: {} },
    { index: 2, draft: {} },
  ],
  creationBudget: 3,
  deadline: Date.now() + 1_000,
} as unknown as CreateLinksPayload;

const link = { id: 'lnk_1' } as never;

describe('logCreationRequest', () => {
  it('writes one info line per request with the request, app, counts and duration', async () => {
    const { lines, logger } = loggerToLines();
    const answer: CreateLinksJobResult = {
      status: 'done',
      result: {
        results: [
          { index: 0, ok: true, link },
          { index: 1, ok: false, error: 'validation_failed', message: 'alias taken' },
        ],
        stoppedEarly: { reason: 'rate_limited', atIndex: 1, message: 'm' },
      },
    };
    logCreationRequest(logger, { request, answer, jobId: 'crt_1', attempt: 1, durationMs: 3.4 });
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
      durationMs: 3,
    });
    expect(lines[0]).not.toHaveProperty('groupJobId');
    expect(JSON.stringify(lines[0])).not.toContain('never logged');
  });

  it("names the group's job when the request was not its first", async () => {
    const { lines, logger } = loggerToLines();
    const answer: CreateLinksJobResult = { status: 'done', result: { results: [] } };
    logCreationRequest(logger, { request, answer, jobId: 'crt_0', attempt: 2, durationMs: 1 });
    await new Promise(setImmediate);
    expect(lines[0]).toMatchObject({ jobId: 'crt_1', groupJobId: 'crt_0', attempt: 2 });
  });

  it('logs an abandoned request with nothing created', async () => {
    const { lines, logger } = loggerToLines();
    const answer = { status: 'abandoned', reason: 'deadline_passed' } as const;
    logCreationRequest(logger, { request, answer, jobId: 'crt_1', attempt: 1, durationMs: 1 });
    await new Promise(setImmediate);
    expect(lines[0]).toMatchObject({ status: 'abandoned', reason: 'deadline_passed', created: 0 });
  });
});
