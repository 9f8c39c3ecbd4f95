import type { StoredLink } from '@linkservice/contracts';
import type { NewLink } from '@linkservice/db';
import { linkDraft } from '@linkservice/testing';
import type { PlannedRequest } from './creation-plan';
import { callerAliasedOf, GroupInserts, outcomesOf } from './group-inserts';

function planned(appId: string, aliases: (string | null)[], refusedAt?: number): PlannedRequest {
  const entries = aliases.map((alias, index) => ({ index, draft: linkDraft({ alias }) }));
  return {
    payload: {
      requestId: `crt_${appId}_${aliases.join('_')}`,
      appId,
      environment: 'live',
      entries,
      creationBudget: entries.length,
      deadline: 0,
    },
    app: { subdomainKey: `sub-${appId}`, linkCount: 0, linkAllowance: null },
    plan: {
      toCreate: entries.filter(({ index }) => index !== refusedAt),
      refused:
        refusedAt === undefined
          ? []
          : [{ index: refusedAt, ok: false, error: 'validation_failed', message: 'no' }],
    },
  };
}

/** Draws `gen1`, `gen2`, … in order, skipping what it is told to avoid. */
function sequentialDraw() {
  let next = 0;
  return (count: number, avoid: ReadonlySet<string>) =>
    Array.from({ length: count }, () => {
      let alias;
      do alias = `gen${++next}`;
      while (avoid.has(alias));
      return alias;
    });
}

/** What the INSERT returns: every row except those whose alias is in `taken`. */
function stored(rows: NewLink[], taken: ReadonlySet<string> = new Set()): StoredLink[] {
  const now = new Date('2030-01-01T00:00:00Z');
  return rows
    .filter((row) => !taken.has(row.alias))
    .map(
      (row) =>
        ({
          ...row,
          deep_link_data: null,
          expires_at: null,
          archived_at: null,
          click_count: 0,
          created_at: now,
          updated_at: now,
        }) as unknown as StoredLink,
    );
}

describe('GroupInserts', () => {
  it('draws generated aliases for the entries without one, across the group, in order', () => {
    const inserts = new GroupInserts(
      [planned('app_a', [null, 'mine', null]), planned('app_b', [null])],
      sequentialDraw(),
    );
    expect(inserts.rows().map((row) => [row.app_id, row.alias])).toEqual([
      ['app_a', 'gen1'],
      ['app_a', 'mine'],
      ['app_a', 'gen2'],
      ['app_b', 'gen3'],
    ]);
    inserts.accept(stored(inserts.rows()));
    expect(inserts.done).toBe(true);
  });

  it('redraws only the generated aliases the insert skipped, keeping their ids', () => {
    const inserts = new GroupInserts([planned('app_a', [null, null, 'mine'])], sequentialDraw());
    const first = inserts.rows();
    inserts.accept(stored(first, new Set(['gen2'])));
    expect(inserts.done).toBe(false);
    const second = inserts.rows();
    expect(second).toEqual([{ ...first[1], alias: 'gen3' }]);
    inserts.accept(stored(second));
    expect(inserts.done).toBe(true);
    const [rows] = inserts.stored.values();
    expect([...rows].map(([index, row]) => [index, row.alias])).toEqual([
      [0, 'gen1'],
      [2, 'mine'],
      [1, 'gen3'],
    ]);
  });

  it('never draws an alias a caller already uses in the group', () => {
    const inserts = new GroupInserts([planned('app_a', ['gen1', null])], sequentialDraw());
    expect(inserts.rows().map((row) => row.alias)).toEqual(['gen1', 'gen2']);
  });

  it('throws when a caller alias was skipped: it was checked under the lock', () => {
    const inserts = new GroupInserts([planned('app_a', ['mine'])], sequentialDraw());
    expect(() => {
      inserts.accept(stored(inserts.rows(), new Set(['mine'])));
    }).toThrow('caller alias of entry 0 collided after the check');
  });

  it('answers each request with its refusals and stored links, in entry order', () => {
    const first = planned('app_a', ['taken', null], 0);
    const second = planned('app_b', ['mine']);
    const inserts = new GroupInserts([first, second], sequentialDraw());
    inserts.accept(stored(inserts.rows()));
    const outcomes = outcomesOf(inserts.stored, 'links.test');
    expect(outcomes.get(first.payload.requestId)?.results).toEqual([
      expect.objectContaining({ index: 0, ok: false }),
      expect.objectContaining({
        index: 1,
        ok: true,
        link: expect.objectContaining({ alias: 'gen1', url: 'https://sub-app_a.links.test/gen1' }),
      }),
    ]);
    expect(outcomes.get(second.payload.requestId)?.results).toEqual([
      expect.objectContaining({
        index: 0,
        ok: true,
        link: expect.objectContaining({ alias: 'mine' }),
      }),
    ]);
    expect(callerAliasedOf(inserts.stored)).toEqual([
      { subdomainKey: 'sub-app_b', environment: 'live', alias: 'mine' },
    ]);
  });
});
