import type { z } from 'zod';
import type { FieldErrors } from '../http/errors';

/** How an SDK body read: the parsed request, or a 422's `fields`. */
export type SdkRequestParse<T> = { ok: true; value: T } | { ok: false; fields: FieldErrors };

const UNKNOWN_FIELD = 'is not a field of this request';

/** A string field's messages: what a missing one and one of another type are told. */
export const stringField = {
  error: (issue: { input: unknown }) =>
    issue.input === undefined ? 'is required' : 'must be a string',
};

/**
 * Parses an SDK request body with a strict zod object schema (app-interface.md: a missing,
 * empty or non-string required field, a wrong type or an unknown field is a 422 naming it).
 * `fields` lists everything wrong at once: each named field with its first message (zod goes on
 * checking a value of the wrong type), every unknown field too. Built with fromEntries so a
 * field called `__proto__` is a field like any other.
 */
export function parseSdkRequest<S extends z.ZodType>(
  schema: S,
  body: unknown,
): SdkRequestParse<z.infer<S>> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return { ok: true, value: parsed.data };
  const fields = new Map<string, string>();
  const add = (field: string, message: string) => {
    if (!fields.has(field)) fields.set(field, message);
  };
  for (const issue of parsed.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) add(key, UNKNOWN_FIELD);
    } else {
      add(issue.path.map(String).join('.') || 'body', issue.message);
    }
  }
  return { ok: false, fields: Object.fromEntries(fields) };
}
