import { randomFillSync } from 'node:crypto';
import { monotonicFactory } from 'ulid';

/**
 * ulid's own source of randomness asks the CSPRNG for one byte per character: 16 calls, each a
 * getpid() and a new buffer, for every id of a new millisecond (3-4% of the worker's CPU per
 * creation job). The same bytes, from a CSPRNG-filled pool refilled when used up, in the form
 * ulid's default returns them (byte / 256).
 */
const pool = new Uint8Array(4096);
let nextByte = pool.length;
function randomFraction(): number {
  if (nextByte === pool.length) {
    randomFillSync(pool);
    nextByte = 0;
  }
  return pool[nextByte++] / 256;
}

const nextUlid = monotonicFactory(randomFraction);

export type IdPrefix = 'app' | 'key' | 'lnk' | 'ins' | 'whk';

/** Opaque, time-ordered ids such as `lnk_01JD3Q...` (ULID after a type prefix). */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid()}`;
}
