import { ALIAS_REPEATED } from '@linkservice/creation';
import {
  ALIAS_IN_USE,
  ALIAS_RESERVED,
  PLAN_LIMIT_MESSAGE,
  RATE_LIMIT_MESSAGE,
  planCreations,
} from './creation-plan';
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
