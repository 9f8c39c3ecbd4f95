import type { Bounds } from './audit';
import { auditAnswers } from './audit';
import type { RequestRecord } from './load';

const BOUNDS: Bounds = {
  create: 4_000,
  batch: 4_000,
  get: 3_000,
  list: 3_000,
  'redirect-cached': 2_000,
  'redirect-uncached': 2_000,
};

function answer(overrides: Partial<RequestRecord>): RequestRecord {
  return {
    kind: 'get',
    startedAt: 1_000,
    durationMs: 10,
    status: 200,
    retryAfter: null,
    ...overrides,
  };
}

describe('auditAnswers', () => {
  it('accepts answers within their bound, and 503 with Retry-After', () => {
    const audit = auditAnswers(
      [
        answer({ durationMs: 2_999 }),
        answer({ kind: 'redirect-cached', status: 302, durationMs: 1_500 }),
        answer({ kind: 'batch', status: 207, durationMs: 3_900 }),
        answer({ kind: 'create', status: 503, retryAfter: '1', durationMs: 3_100 }),
      ],
      { bounds: BOUNDS },
    );
    expect(audit).toMatchObject({
      violations: [],
      worstMs: 3_900,
      worstKind: 'batch',
      unavailable: 1,
      worstByKind: { get: 2_999, 'redirect-cached': 1_500, batch: 3_900, create: 3_100 },
    });
  });

  it('reports a late answer, a 503 without Retry-After, an unexpected status and no answer', () => {
    const audit = auditAnswers(
      [
        answer({ kind: 'redirect-uncached', status: 302, durationMs: 2_001 }),
        answer({ status: 503, durationMs: 20, startedAt: 1_500 }),
        answer({ kind: 'list', status: 500 }),
        answer({ kind: 'create', status: 0, error: 'ECONNRESET', durationMs: 7 }),
      ],
      { bounds: BOUNDS },
    );
    expect(audit.violations).toEqual([
      'redirect-uncached started at +0 ms: 302 after 2001 ms > 2000 ms',
      'get started at +500 ms: 503 without Retry-After',
      'list started at +0 ms: unexpected status 500',
      'create started at +0 ms: no answer after 7 ms (ECONNRESET)',
    ]);
    expect(audit.unanswered).toBe(1);
  });

  it('allows refused connections only for the kinds the fault stops on purpose', () => {
    const refused = [
      answer({ kind: 'create', status: 0, error: 'ECONNREFUSED' }),
      answer({ kind: 'redirect-cached', status: 0, error: 'ECONNREFUSED' }),
    ];
    expect(
      auditAnswers(refused, { bounds: BOUNDS, refusedAllowedFor: ['create'] }).violations,
    ).toEqual(['redirect-cached started at +0 ms: no answer after 10 ms (ECONNREFUSED)']);
  });

  it('allows cut and refused connections only for the kinds of a process the fault kills', () => {
    const cut = [
      answer({ kind: 'redirect-cached', status: 0, error: 'ECONNRESET' }),
      answer({ kind: 'redirect-uncached', status: 0, error: 'socket hang up' }),
      answer({ kind: 'redirect-cached', status: 0, error: 'ECONNREFUSED' }),
      answer({ kind: 'get', status: 0, error: 'ECONNRESET' }),
      answer({ kind: 'redirect-cached', status: 0, error: 'timed out' }),
    ];
    expect(
      auditAnswers(cut, {
        bounds: BOUNDS,
        cutAllowedFor: ['redirect-cached', 'redirect-uncached'],
      }).violations,
    ).toEqual([
      'get started at +0 ms: no answer after 10 ms (ECONNRESET)',
      'redirect-cached started at +0 ms: no answer after 10 ms (timed out)',
    ]);
  });
});
