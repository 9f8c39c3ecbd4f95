import { z } from 'zod';
import type { FieldErrors } from '../http/errors';

/** POST /sdk/resolve's body (app-interface.md): the URL the app was opened with, nothing else. */
const RESOLVE_REQUEST = z.strictObject({
  url: z
    .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
    .min(1, { error: 'must not be empty' }),
});

export type ResolveRequestParse = { ok: true; url: string } | { ok: false; fields: FieldErrors };

const UNKNOWN_FIELD = 'is not a field of this request';

/**
 * A 422's `fields` for everything wrong with the body: each named field with its message, every
 * unknown field too. Built with fromEntries so a field called `__proto__` is a field like any
 * other (an assignment would change the object's prototype instead).
 */
export function parseResolveRequest(body: unknown): ResolveRequestParse {
  const parsed = RESOLVE_REQUEST.safeParse(body);
  if (parsed.success) return { ok: true, url: parsed.data.url };
  // The first issue of a field is its message: zod goes on checking a value of the wrong type
  // (an empty array is also "too short").
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
