/**
 * Expected failures (unknown app, taken subdomain...) are values, not exceptions: every caller,
 * the CLI or a test seeding data, has to look at them.
 */
export type Result<T, E> = { ok: true; value: T } | { ok: false; error: E };

export interface Failure<C extends string> {
  code: C;
  /** One human sentence; the CLI prints it as `linkctl: <message>`. */
  message: string;
}

export function ok<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}

export function fail<E>(error: E): { ok: false; error: E } {
  return { ok: false, error };
}

/** For programmatic callers (tests, benchmark seeding) that treat any failure as a bug. */
export function unwrap<T, E extends { message: string }>(result: Result<T, E>): T {
  if (!result.ok) throw new Error(result.error.message);
  return result.value;
}

/** What a repository found, seen through `view`; `notFound` when it found nothing. */
export function foundOr<R, V, E>(found: R | null, view: (row: R) => V, notFound: E): Result<V, E> {
  return found === null ? fail(notFound) : ok(view(found));
}
