import type { Scenario } from './scenarios';
import { measurementGroups } from './scenarios';
import { scenario } from './scenario.fixture';

const idsOf = (groups: Scenario[][]) => groups.map((group) => group.map(({ id }) => id));

describe('measurementGroups', () => {
  it('puts a baseline with the lines that target it or alternate with it, in their order', () => {
    const groups = measurementGroups([
      scenario({ id: 'base' }),
      scenario({ id: 'floor', compareWith: 'base', alternates: true }),
      scenario({ id: 'ours', goal: { kind: 'throughput-ratio', against: 'base', min: 0.6 } }),
      scenario({ id: 'shown', compareWith: 'base' }),
      scenario({ id: 'alone' }),
    ]);
    expect(idsOf(groups)).toEqual([['base', 'floor', 'ours'], ['shown'], ['alone']]);
  });

  it('pairs latency targets, never a line with work before it, never an earlier line', () => {
    const groups = measurementGroups([
      scenario({ id: 'early', goal: { kind: 'latency-vs', against: 'one', factor: 3, plusMs: 1 } }),
      scenario({ id: 'one' }),
      scenario({ id: 'single' }),
      scenario({
        id: 'create',
        goal: { kind: 'latency-vs', against: 'single', factor: 3, plusMs: 1 },
      }),
      scenario({ id: 'clicks-before' }),
      scenario({
        id: 'clicks-after',
        goal: { kind: 'latency-vs', against: 'clicks-before', factor: 1.2, plusMs: 0 },
        before: () => Promise.resolve({}),
      }),
      scenario({ id: 'batch', goal: { kind: 'links-ratio', against: 'create', min: 10 } }),
      scenario({ id: 'missing', goal: { kind: 'throughput-ratio', against: 'gone', min: 1 } }),
    ]);
    expect(idsOf(groups)).toEqual([
      ['early'],
      ['one'],
      ['single', 'create'],
      ['clicks-before'],
      ['clicks-after'],
      ['batch'],
      ['missing'],
    ]);
  });
});
