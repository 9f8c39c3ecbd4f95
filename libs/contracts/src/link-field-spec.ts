import type { z } from 'zod';
import type { NewLink } from '@linkservice/db';
import type { LinkContext, StoredLink } from './link';
import type { FieldRule } from './link-input-rules';

/**
 * How an entry of the Link field table (link-field-table.ts) is written: `editable` for a field
 * callers send, `shown` for one the server sets. link-fields.ts derives everything else.
 */

type Column = keyof StoredLink;
/** The value a column takes in INSERT and UPDATE (NewLink marks nullable columns optional). */
type ColumnInput<C extends Column> = Exclude<NewLink[C & keyof NewLink], undefined>;

/** What create stores when the caller leaves the field out, or 'required'. */
export type Omission<V> = { value: V } | 'required';

export interface EditableSpec<C extends Column, V, T, O extends Omission<V> = Omission<V>> {
  column: C;
  /** The Postgres type PATCH casts the parameter to (its columns are set in one statement). */
  sqlType: 'text' | 'jsonb' | 'text[]' | 'timestamptz';
  /** Checks what a caller sent and normalises it, on create and PATCH alike. */
  rule: FieldRule<V>;
  /** The normalised value as it travels in a creation job, re-checked by the worker. */
  draft: z.ZodType<V>;
  whenOmitted: O;
  toColumn: (value: V) => ColumnInput<C>;
  fromColumn: (value: StoredLink[C]) => T;
  /**
   * A valid value a caller may send, different from whenOmitted, and normalised already.
   * Tests walk the table with it: create and PATCH each field and read it back.
   */
  example: V;
  /**
   * What a caller may send (create and PATCH), with its words for the API document: the same
   * check as `rule` where JSON Schema can state it (the rules start from the same zod schemas).
   */
  input: z.ZodType;
  /** The member as responses show it, with its description for the API document. */
  schema: z.ZodType<T>;
}

export function editable<C extends Column, V, T, O extends Omission<V>>(
  spec: EditableSpec<C, V, T, O>,
) {
  return {
    kind: 'editable' as const,
    ...spec,
    show: (row: StoredLink): T => spec.fromColumn(row[spec.column]),
  };
}

export function shown<T>(show: (row: StoredLink, context: LinkContext) => T, schema: z.ZodType<T>) {
  return { kind: 'shown' as const, show, schema };
}
