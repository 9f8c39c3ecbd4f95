import type { Link } from '@linkservice/contracts';
import { createLogger } from '@linkservice/logger';
import type { CreationLimitState } from '../limits/creation-limiter';
import type { CreationScope } from './link-submission.service';
import { LinkSubmissionService, remainingMs } from './link-submission.service';

describe('remainingMs', () => {
  it('is what is left of the creation deadline, never below 0', () => {
    expect(remainingMs(10_000, 7_500)).toBe(2_500);
    expect(remainingMs(10_000, 10_000)).toBe(0);
    // The reservation took longer than the whole budget: the job is settled at once.
    expect(remainingMs(10_000, 10_400)).toBe(0);
  });
});

describe('LinkSubmissionService rebuilds', () => {
  const unused: CreationLimitState = { limit: 300, remaining: 300, resetSeconds: 3_600 };
  const link = { id: 'lnk_1' } as unknown as Link;

  /** A limiter whose Redis is away: every read fails. */
  function serviceWithoutRedis(): LinkSubmissionService {
    const away = () => Promise.reject(new Error('Connection is closed.'));
    return new LinkSubmissionService({
      creations: { submit: away, close: () => Promise.resolve() },
      creationLimiter: { state: away, reserve: away, release: away, unusedWindow: () => unused },
      creationTimeoutMs: 1_000,
      logger: createLogger('create-test', 'silent'),
    });
  }

  const scope: CreationScope = { appId: 'app_1', environment: 'live' };

  it('rebuilds a link from the results when the limiter cannot be read (an unused window)', async () => {
    const outcome = await serviceWithoutRedis().rebuildLink(scope, {
      results: [{ index: 0, ok: true, link }],
    });
    expect(outcome).toEqual({ kind: 'created', link, limit: unused });
  });

  it('rebuilds a batch report when the limiter cannot be read', async () => {
    const outcome = await serviceWithoutRedis().rebuildBatch(
      scope,
      { links: [{ webFallbackUrl: 'https://example.com' }] },
      { results: [{ index: 0, ok: true, link }] },
    );
    expect(outcome).toMatchObject({ kind: 'reported', limit: unused, report: { created: 1 } });
  });
});
