import { DROP_WARNING_INTERVAL_MS, DropLedger } from './drop-ledger';

describe('DropLedger', () => {
  it('reports the first drop at once and later ones at most once per interval, each with the total', () => {
    const ledger = new DropLedger();
    expect(ledger.drop(2, 'too many waited', 1_000)).toEqual({
      clicks_dropped: 2,
      clicks: 2,
      reason: 'too many waited',
    });
    expect(ledger.drop(1, 'token expired before Redis answered', 2_000)).toBeNull();
    expect(ledger.due(1_000 + DROP_WARNING_INTERVAL_MS - 1)).toBeNull();
    expect(ledger.due(1_000 + DROP_WARNING_INTERVAL_MS)).toEqual({
      clicks_dropped: 3,
      clicks: 1,
      reason: 'token expired before Redis answered',
    });
    // Nothing new: nothing due, whenever.
    expect(ledger.due(1_000_000)).toBeNull();
    expect(ledger.total).toBe(3);
  });

  it('records nothing for no drop', () => {
    const ledger = new DropLedger();
    expect(ledger.drop(0, 'shutdown', 0)).toBeNull();
    expect(ledger.total).toBe(0);
    expect(ledger.unreported()).toBeNull();
  });

  it('gives every drop a window held back as the last word, whatever the interval', () => {
    const ledger = new DropLedger();
    ledger.drop(1, 'too many waited', 0);
    expect(ledger.drop(4, 'shutdown', 10)).toBeNull();
    expect(ledger.unreported()).toEqual({ clicks_dropped: 5, clicks: 4, reason: 'shutdown' });
    expect(ledger.unreported()).toBeNull();
  });
});
