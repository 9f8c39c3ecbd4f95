import type { FieldErrors } from './errors';

/** A request's query as a parser reads it, naming each problem in `fields` as it goes. */
export interface QueryReader {
  /** The problems found so far, by parameter: a 422's `fields`. */
  fields: FieldErrors;
  /** The parameter's one value; undefined when absent, or repeated (then named in `fields`). */
  text: (name: string) => string | undefined;
}

/**
 * Reads a parsed query string (express' `req.query`) for a parser that names every problem at
 * once: each parameter `isKnown` refuses is named `unknown parameter` at once, and a parameter
 * given more than once (or with brackets, which make an array or object of it) is named when
 * read. The analytics, QR and webhook delivery parameters all answer their 422s this way.
 */
export function readQuery(
  raw: Record<string, unknown>,
  isKnown: (name: string) => boolean,
): QueryReader {
  const fields: FieldErrors = {};
  for (const name of Object.keys(raw)) {
    if (!isKnown(name)) fields[name] = 'unknown parameter';
  }
  return {
    fields,
    text: (name) => {
      const value = raw[name];
      if (value === undefined) return undefined;
      if (typeof value !== 'string') {
        fields[name] = 'must be given once, as one value';
        return undefined;
      }
      return value;
    },
  };
}
