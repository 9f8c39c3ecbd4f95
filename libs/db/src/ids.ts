import { monotonicFactory } from 'ulid';

const nextUlid = monotonicFactory();

export type IdPrefix = 'app' | 'key' | 'lnk' | 'ins';

/** Opaque, time-ordered ids such as `lnk_01JD3Q...` (ULID after a type prefix). */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${nextUlid()}`;
}
