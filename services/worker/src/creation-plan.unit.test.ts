import { ALIAS_REPEATED } from '@linkservice/creation';
import {
  ALIAS_IN_USE,
  ALIAS_RESERVED,
  PLAN_LIMIT_MESSAGE,
  RATE_LIMIT_MESSAGE,
  aliasKey,
  callerAliasesOf,
  planCreations,
  planGroup,
} from './creation-plan';
import type { ClaimedRequest } from './creation-plan';
import { linkDraft } from '@linkservice/testing';

const entries = (...aliases: (string | null)[]) =>
  aliases.map((alias, index) => ({ index, draft: linkDraft({ alias }) }));
const unlimited = { linkCount: 0, linkAllowance: null };

describe('planCreations', () => {
  it('creates every entry when nothing is in the way', () => {
    const plan = planCreations(entries('a', null, 'b'), new Set(), unlimited, 3);
    expect(plan.toCreate.map((p) => p.index)).toEqual([0, 1, 2]);
    expect(plan.refused).toEqual([]);
    expect(plan.stoppedEarly).toBeUndefined();
  });

  it('fails an alias already taken, a repeated one and a reserved one, and goes on', () => {
    const plan = planCreations(
      entries('taken', 'x', 'x', 'Admin', null),
      new Set(['taken']),
      unlimited,
      10,
    );
    expect(plan.toCreate.map((p) => p.index)).toEqual([1, 4]);
    expect(plan.refused).toEqual([
      expect.objectContaining({
        index: 0,
        error: 'validation_failed',
        fieldErrors: { alias: ALIAS_IN_USE },
      }),
      expect.objectContaining({
        index: 2,
        error: 'validation_failed',
        fieldErrors: { alias: ALIAS_REPEATED },
      }),
      expect.objectContaining({
        index: 3,
        error: 'validation_failed',
        fieldErrors: { alias: ALIAS_RESERVED },
      }),
    ]);
  });

  it('treats aliases case-sensitively', () => {
    const plan = planCreations(entries('Promo', 'promo'), new Set(['PROMO']), unlimited, 10);
    expect(plan.toCreate).toHaveLength(2);
  });

  it('stops at the plan allowance, counting existing links, and leaves later entries untried', () => {
    const plan = planCreations(
      entries(null, null, null, null),
      new Set(),
      { linkCount: 8, linkAllowance: 10 },
      10,
    );
    expect(plan.toCreate.map((p) => p.index)).toEqual([0, 1]);
    expect(plan.refused).toEqual([
      { index: 2, ok: false, error: 'plan_limit_reached', message: PLAN_LIMIT_MESSAGE },
    ]);
    expect(plan.stoppedEarly).toEqual({
      reason: 'plan_limit_reached',
      atIndex: 2,
      message: PLAN_LIMIT_MESSAGE,
    });
  });

  it('stops at the creation budget; refused entries before it use no budget', () => {
    const plan = planCreations(entries('dup', null, null, null), new Set(['dup']), unlimited, 2);
    expect(plan.toCreate.map((p) => p.index)).toEqual([1, 2]);
    expect(plan.refused.map((r) => [r.index, r.ok ? 'ok' : r.error])).toEqual([
      [0, 'validation_failed'],
      [3, 'rate_limited'],
    ]);
    expect(plan.stoppedEarly).toEqual({
      reason: 'rate_limited',
      atIndex: 3,
      message: RATE_LIMIT_MESSAGE,
    });
  });

  it('checks the allowance before the budget', () => {
    const plan = planCreations(entries(null), new Set(), { linkCount: 5, linkAllowance: 5 }, 0);
    expect(plan.stoppedEarly?.reason).toBe('plan_limit_reached');
  });

  it('still reports a bad alias when the budget is zero, and stops only at a creatable entry', () => {
    const plan = planCreations(entries('dup', 'fresh'), new Set(['dup']), unlimited, 0);
    expect(plan.toCreate).toEqual([]);
    expect(plan.refused.map((r) => r.index)).toEqual([0, 1]);
    expect(plan.stoppedEarly?.atIndex).toBe(1);
  });

  it('keeps the index of each entry even when indexes have gaps', () => {
    const gapped = [
      { index: 2, draft: linkDraft({ alias: 'a' }) },
      { index: 5, draft: linkDraft({ alias: 'a' }) },
    ];
    const plan = planCreations(gapped, new Set(), unlimited, 5);
    expect(plan.toCreate.map((p) => p.index)).toEqual([2]);
    expect(plan.refused.map((r) => r.index)).toEqual([5]);
  });
});

/** A claimed request of `appId` with entries of these aliases, and its app's counts. */
function claimed(
  appId: string,
  aliases: (string | null)[],
  app: { linkCount?: number; linkAllowance?: number | null } = {},
  options: { environment?: 'live' | 'test'; creationBudget?: number } = {},
): ClaimedRequest {
  return {
    payload: {
      requestId: `crt_${appId}_${aliases.join('_')}_${Math.random()}`,
      appId,
      environment: options.environment ?? 'live',
      entries: entries(...aliases),
      creationBudget: options.creationBudget ?? aliases.length,
      deadline: 0,
    },
    app: {
      subdomainKey: appId,
      linkCount: app.linkCount ?? 0,
      linkAllowance: app.linkAllowance === undefined ? null : app.linkAllowance,
    },
  };
}

const created = (plans: ReturnType<typeof planGroup>) =>
  plans.map(({ plan }) => plan.toCreate.map((link) => link.index));

describe('planGroup', () => {
  it("carries an app's link count across its requests, in arrival order", () => {
    const allowance = { linkCount: 7, linkAllowance: 10 };
    const plans = planGroup(
      [
        claimed('app_a', [null, null], allowance),
        claimed('app_a', [null, null], allowance),
        claimed('app_a', [null], allowance),
      ],
      new Set(),
    );
    expect(created(plans)).toEqual([[0, 1], [0], []]);
    expect(plans[1]?.plan.stoppedEarly).toEqual(
      expect.objectContaining({ reason: 'plan_limit_reached', atIndex: 1 }),
    );
    expect(plans[2]?.plan.stoppedEarly?.reason).toBe('plan_limit_reached');
  });

  it("keeps each app's count its own, whatever the order of the group", () => {
    const full = { linkCount: 1, linkAllowance: 2 };
    const plans = planGroup(
      [
        claimed('app_a', [null], full),
        claimed('app_b', [null], full),
        claimed('app_a', [null], full),
        claimed('app_b', [null], full),
      ],
      new Set(),
    );
    expect(created(plans)).toEqual([[0], [0], [], []]);
  });

  it('counts only the links a request creates, not its refused entries', () => {
    const allowance = { linkCount: 0, linkAllowance: 2 };
    const plans = planGroup(
      [claimed('app_a', ['taken', null], allowance), claimed('app_a', [null, null], allowance)],
      new Set([aliasKey({ appId: 'app_a', environment: 'live', alias: 'taken' })]),
    );
    expect(created(plans)).toEqual([[1], [0]]);
  });

  it('treats an alias an earlier request takes as taken for the later ones', () => {
    const plans = planGroup(
      [claimed('app_a', ['spring']), claimed('app_a', ['spring', 'summer'])],
      new Set(),
    );
    expect(created(plans)).toEqual([[0], [1]]);
    expect(plans[1]?.plan.refused).toEqual([
      expect.objectContaining({ index: 0, fieldErrors: { alias: ALIAS_IN_USE } }),
    ]);
  });

  it('takes an alias only in its own app and environment', () => {
    const plans = planGroup(
      [
        claimed('app_a', ['spring']),
        claimed('app_b', ['spring']),
        claimed('app_a', ['spring'], {}, { environment: 'test' }),
      ],
      new Set(),
    );
    expect(created(plans)).toEqual([[0], [0], [0]]);
  });

  it('does not take the alias of an entry that was refused', () => {
    const plans = planGroup(
      [claimed('app_a', [null, 'late'], {}, { creationBudget: 1 }), claimed('app_a', ['late'])],
      new Set(),
    );
    expect(created(plans)).toEqual([[0], [0]]);
  });

  it('leaves the taken aliases it was given as they were', () => {
    const taken = new Set<string>();
    planGroup([claimed('app_a', ['spring'])], taken);
    expect(taken.size).toBe(0);
  });
});

describe('callerAliasesOf', () => {
  it("lists every caller alias with its request's app and environment, in order", () => {
    expect(
      callerAliasesOf([
        claimed('app_a', ['one', null]),
        claimed('app_b', [null, 'two'], {}, { environment: 'test' }),
      ]),
    ).toEqual([
      { appId: 'app_a', environment: 'live', alias: 'one' },
      { appId: 'app_b', environment: 'test', alias: 'two' },
    ]);
  });
});
