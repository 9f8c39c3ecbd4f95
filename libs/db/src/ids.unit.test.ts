import { newId } from './ids';

const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('newId', () => {
  it('is the prefix and a ULID, distinct and in creation order, through many pool refills', () => {
    // 4096 random bytes per pool, 16 per id of a new millisecond: far more ids than one pool.
    const ids: string[] = [];
    for (let i = 0; i < 5_000; i++) ids.push(newId('lnk'));
    for (const id of ids) expect(id).toMatch(/^lnk_/);
    expect(ids.every((id) => ULID.test(id.slice(4)))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it('draws the random part afresh in each millisecond', () => {
    const first = newId('app').slice(14);
    const start = Date.now();
    while (Date.now() === start) {
      // wait for the next millisecond
    }
    const second = newId('app').slice(14);
    // Monotonic ids of one millisecond differ by an increment; a new draw differs throughout.
    let sharedPrefix = 0;
    while (first[sharedPrefix] === second[sharedPrefix]) sharedPrefix++;
    expect(sharedPrefix).toBeLessThan(8);
  });
});
