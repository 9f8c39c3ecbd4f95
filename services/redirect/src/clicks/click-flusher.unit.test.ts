import { chunkByFields } from './click-flusher';

const batch = (id: string, fields: number) => ({
  id,
  counts: new Map(Array.from({ length: fields }, (_, i) => [`lnk_${i}`, 1] as const)),
});

describe('chunkByFields', () => {
  it('fills each statement up to the bound, never splitting a batch', () => {
    const batches = [batch('a', 3), batch('b', 4), batch('c', 2), batch('d', 9), batch('e', 1)];
    expect(chunkByFields(batches, 8).map((chunk) => chunk.map((b) => b.id))).toEqual([
      ['a', 'b'],
      ['c'],
      ['d'],
      ['e'],
    ]);
    expect(chunkByFields(batches, 100)).toHaveLength(1);
    expect(chunkByFields([], 8)).toEqual([]);
  });
});
