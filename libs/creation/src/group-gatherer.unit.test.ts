import type { GatherTimers, GroupPolicy } from './group-gatherer';
import { GroupGatherer } from './group-gatherer';

/**
 * Timers on a virtual clock: `endTurn()` runs what was scheduled for the end of the event-loop
 * turn, `advance(ms)` moves the clock and runs the timers it passes, in order.
 */
class FakeTimers implements GatherTimers {
  now = 0;
  private turnEnd: (() => void)[] = [];
  private timers: { at: number; fn: () => void }[] = [];

  atTurnEnd(fn: () => void) {
    this.turnEnd.push(fn);
    return () => {
      this.turnEnd = this.turnEnd.filter((queued) => queued !== fn);
    };
  }

  after(ms: number, fn: () => void) {
    const timer = { at: this.now + ms, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((queued) => queued !== timer);
    };
  }

  endTurn(): void {
    const due = this.turnEnd;
    this.turnEnd = [];
    for (const fn of due) fn();
  }

  advance(ms: number): void {
    const until = this.now + ms;
    for (;;) {
      const next = this.timers
        .filter((timer) => timer.at <= until)
        .sort((a, b) => a.at - b.at)
        .at(0);
      if (!next) break;
      this.timers = this.timers.filter((timer) => timer !== next);
      this.now = next.at;
      next.fn();
    }
    this.now = until;
  }

  get pending(): number {
    return this.turnEnd.length + this.timers.length;
  }
}

interface Left {
  at: number;
  items: string[];
  opened: number;
}

function setup(policy: Partial<GroupPolicy> = {}) {
  const timers = new FakeTimers();
  const left: Left[] = [];
  let inFlight = 0;
  let opened = 0;
  const gatherer = new GroupGatherer<string, number>(
    { groupsInFlight: 1, groupWaitMs: 2, maxGroupEntries: 100, ...policy },
    timers,
    {
      inFlight: () => inFlight,
      opened: () => ++opened,
      leave: (items, openedAs) => {
        left.push({ at: timers.now, items, opened: openedAs });
        inFlight++;
      },
    },
  );
  const answerOne = () => {
    inFlight--;
    gatherer.groupEnded();
  };
  return { timers, left, gatherer, answerOne };
}

describe('GroupGatherer', () => {
  it('sends a lone request at the end of the turn, waiting for nothing else', () => {
    const { timers, left, gatherer } = setup();
    gatherer.add('a', 1);
    expect(left).toEqual([]);
    timers.endTurn();
    expect(left).toEqual([{ at: 0, items: ['a'], opened: 1 }]);
    expect(timers.pending).toBe(0);
  });

  it('groups the requests that arrive in the same turn, in arrival order', () => {
    const { timers, left, gatherer } = setup();
    gatherer.add('a', 1);
    gatherer.add('b', 3);
    gatherer.add('c', 1);
    timers.endTurn();
    expect(left.map((group) => group.items)).toEqual([['a', 'b', 'c']]);
  });

  it('gathers while every slot is taken, and leaves when a group in flight ends', () => {
    const { timers, left, gatherer, answerOne } = setup({ groupWaitMs: 50 });
    gatherer.add('a', 1);
    timers.endTurn();
    gatherer.add('b', 1);
    gatherer.add('c', 1);
    timers.endTurn();
    timers.advance(10);
    expect(left.map((group) => group.items)).toEqual([['a']]);
    answerOne();
    expect(left).toHaveLength(1);
    timers.endTurn();
    expect(left.map((group) => group.items)).toEqual([['a'], ['b', 'c']]);
    expect(timers.pending).toBe(0);
  });

  it('leaves groupWaitMs after its first request when no group in flight ends', () => {
    const { timers, left, gatherer } = setup({ groupWaitMs: 2 });
    gatherer.add('a', 1);
    timers.endTurn();
    gatherer.add('b', 1);
    timers.advance(1);
    gatherer.add('c', 1);
    timers.advance(0.5);
    expect(left).toHaveLength(1);
    timers.advance(0.5);
    expect(left.at(-1)).toEqual({ at: 2, items: ['b', 'c'], opened: 2 });
    expect(timers.pending).toBe(0);
  });

  it('lets groupsInFlight groups go at once before gathering', () => {
    const { timers, left, gatherer } = setup({ groupsInFlight: 2, groupWaitMs: 5 });
    gatherer.add('a', 1);
    timers.endTurn();
    gatherer.add('b', 1);
    timers.endTurn();
    gatherer.add('c', 1);
    timers.endTurn();
    expect(left.map((group) => group.items)).toEqual([['a'], ['b']]);
    timers.advance(5);
    expect(left.map((group) => group.items)).toEqual([['a'], ['b'], ['c']]);
  });

  it('sends a group as soon as it holds maxGroupEntries', () => {
    const { timers, left, gatherer } = setup({ maxGroupEntries: 10 });
    gatherer.add('a', 4);
    gatherer.add('b', 6);
    expect(left.map((group) => group.items)).toEqual([['a', 'b']]);
    expect(timers.pending).toBe(0);
  });

  it('sends the gathered group first when a request would take it past maxGroupEntries', () => {
    const { timers, left, gatherer } = setup({ maxGroupEntries: 10 });
    gatherer.add('a', 4);
    gatherer.add('b', 7);
    expect(left).toEqual([{ at: 0, items: ['a'], opened: 1 }]);
    // The group that just left takes the only slot: 'b' gathers for groupWaitMs.
    timers.endTurn();
    expect(left).toHaveLength(1);
    timers.advance(2);
    expect(left.at(-1)).toEqual({ at: 2, items: ['b'], opened: 2 });
  });

  it('lets a request larger than maxGroupEntries travel alone, at once', () => {
    const { timers, left, gatherer } = setup({ maxGroupEntries: 10 });
    gatherer.add('a', 1);
    gatherer.add('big', 500);
    gatherer.add('c', 1);
    expect(left.map((group) => group.items)).toEqual([['a'], ['big']]);
    timers.endTurn();
    timers.advance(10);
    expect(left.map((group) => group.items)).toEqual([['a'], ['big'], ['c']]);
  });

  it('never sends a withdrawn request, and sends nothing when none is left', () => {
    const { timers, left, gatherer } = setup();
    gatherer.add('a', 1);
    gatherer.add('b', 1);
    expect(gatherer.withdraw('a', 1)).toBe(true);
    expect(gatherer.withdraw('a', 1)).toBe(false);
    timers.endTurn();
    expect(left.map((group) => group.items)).toEqual([['b']]);

    gatherer.add('c', 1);
    gatherer.withdraw('c', 1);
    timers.endTurn();
    timers.advance(100);
    expect(left).toHaveLength(1);
    expect(gatherer.size).toBe(0);
  });

  it('gives a withdrawn request its entries back to the group', () => {
    const { left, gatherer } = setup({ maxGroupEntries: 10 });
    gatherer.add('a', 6);
    gatherer.withdraw('a', 6);
    gatherer.add('b', 6);
    expect(left).toEqual([]);
  });

  it('does nothing when a group ends while none gathers', () => {
    const { timers, gatherer, answerOne } = setup();
    gatherer.add('a', 1);
    timers.endTurn();
    answerOne();
    expect(timers.pending).toBe(0);
  });

  it('opens a group once, with its first request, and hands that to leave', () => {
    const { timers, left, gatherer, answerOne } = setup();
    gatherer.add('a', 1);
    gatherer.add('b', 1);
    timers.endTurn();
    gatherer.add('c', 1);
    answerOne();
    timers.endTurn();
    expect(left.map((group) => group.opened)).toEqual([1, 2]);
  });
});
