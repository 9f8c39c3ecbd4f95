/**
 * The group-commit policy: when the requests gathered in one gateway leave as one job. Pure: it
 * reads no clock and sets no timer of its own (the caller passes GatherTimers), and it adds no
 * job (the caller's `leave` does), so every decision is unit-tested with fake timers.
 */

/** Cancels a scheduled call; a no-op once the call ran. */
export type Cancel = () => void;

/** The two ways a group may be scheduled to leave: Node's setImmediate and setTimeout. */
export interface GatherTimers {
  /** Runs `fn` at the end of the current event-loop turn, after the I/O read in it. */
  atTurnEnd(fn: () => void): Cancel;
  /** Runs `fn` once `ms` milliseconds have passed. */
  after(ms: number, fn: () => void): Cancel;
}

export const NODE_TIMERS: GatherTimers = {
  atTurnEnd: (fn) => {
    const immediate = setImmediate(fn);
    return () => {
      clearImmediate(immediate);
    };
  },
  after: (ms, fn) => {
    const timer = setTimeout(fn, ms);
    return () => {
      clearTimeout(timer);
    };
  },
};

export interface GroupPolicy {
  /** Groups that may await their answer at once before new requests gather for the next one. */
  groupsInFlight: number;
  /** The longest the first request of a group waits for others while every slot is taken. */
  groupWaitMs: number;
  /** A group of several requests holds at most this many entries. */
  maxGroupEntries: number;
}

export interface GathererHooks<T, G> {
  /** How many groups await their answer now (the caller's count: it adds and answers them). */
  inFlight(): number;
  /** A new group starts with its first request; what it returns goes with the group. */
  opened(): G;
  /** The group leaves: its requests in arrival order, and what `opened` returned for it. */
  leave(items: T[], opened: G): void;
}

/**
 * Gathers requests into groups:
 * - While fewer than groupsInFlight groups await their answer, a group leaves at the end of the
 *   event-loop turn in which it opened: a lone request waits for nothing, and every request whose
 *   bytes arrived with it joins it.
 * - Otherwise it leaves when a group in flight ends (groupEnded), or groupWaitMs after its first
 *   request came, whichever is first: under load, requests gather while the worker runs the
 *   groups before them, and the added wait stays bounded when a job is slow.
 * - It leaves at once when it reaches maxGroupEntries, and before a request that would take it
 *   past them (that request opens the next group: a request with more travels alone).
 */
export class GroupGatherer<T, G = undefined> {
  private gathering: T[] = [];
  private gatheredEntries = 0;
  private opened: G | undefined;
  private cancelTurnEnd: Cancel | undefined;
  private cancelWait: Cancel | undefined;

  constructor(
    private readonly policy: GroupPolicy,
    private readonly timers: GatherTimers,
    private readonly hooks: GathererHooks<T, G>,
  ) {}

  /** Requests gathered and not yet left. */
  get size(): number {
    return this.gathering.length;
  }

  add(item: T, entries: number): void {
    const { maxGroupEntries, groupsInFlight, groupWaitMs } = this.policy;
    if (this.gatheredEntries + entries > maxGroupEntries) this.leaveNow();
    if (this.gathering.length === 0) this.opened = this.hooks.opened();
    this.gathering.push(item);
    this.gatheredEntries += entries;
    if (this.gatheredEntries >= maxGroupEntries) this.leaveNow();
    else if (this.hooks.inFlight() < groupsInFlight) this.leaveAtTurnEnd();
    else {
      this.cancelWait ??= this.timers.after(groupWaitMs, () => {
        this.leaveNow();
      });
    }
  }

  /**
   * Takes back a request that has not left (its caller stopped waiting: out of time while the
   * event loop stalled); true when it was still gathering, and then it is never sent.
   */
  withdraw(item: T, entries: number): boolean {
    const index = this.gathering.indexOf(item);
    if (index === -1) return false;
    this.gathering.splice(index, 1);
    this.gatheredEntries -= entries;
    return true;
  }

  /** A group in flight was answered or given up: the requests gathered meanwhile may go. */
  groupEnded(): void {
    if (this.gathering.length > 0) this.leaveAtTurnEnd();
  }

  private leaveAtTurnEnd(): void {
    this.cancelTurnEnd ??= this.timers.atTurnEnd(() => {
      this.leaveNow();
    });
  }

  private leaveNow(): void {
    this.cancelTurnEnd?.();
    this.cancelWait?.();
    this.cancelTurnEnd = undefined;
    this.cancelWait = undefined;
    const items = this.gathering;
    const opened = this.opened;
    this.gathering = [];
    this.gatheredEntries = 0;
    this.opened = undefined;
    if (items.length > 0) this.hooks.leave(items, opened as G);
  }
}
