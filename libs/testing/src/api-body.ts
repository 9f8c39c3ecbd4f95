import type { Link } from '@linkservice/contracts';
import type { Environment } from '@linkservice/db';
import type { HttpResponse } from './http';

/**
 * The API's answers as the contract (link-service-api.md) spells them, for tests of every tier:
 * in-process gateway tests and black-box e2e tests read the same typed bodies.
 */

/** Every failure's body; `fields` only with `invalid_request`. */
export interface ErrorAnswer {
  error: string;
  message: string;
  fields?: Record<string, string>;
}

/** GET /app. */
export interface AppAnswer {
  app: { id: string; name: string; subdomainKey: string; linkHost: string };
  environment: Environment;
}

/** GET /links. */
export interface LinkListAnswer {
  links: Link[];
  pagination: { page: number; perPage: number; total: number; pageCount: number };
}

/** A batch answer (201, 207 or 422 with results): every entry's fields, whichever way it went. */
export interface BatchBody {
  created: number;
  failed: number;
  notAttempted: number;
  results: {
    index: number;
    ok: boolean;
    link?: Link;
    error?: string;
    message?: string;
    fieldErrors?: Record<string, string>;
  }[];
  stoppedEarly?: { reason: string; atIndex: number; message: string };
}

/**
 * Whatever the gateway answers, each field optional: a test reads the fields that the status it
 * checked implies (`res.body?.error` after a 404, `linkOf(res)` after a 201).
 */
export type ApiBody = Partial<
  ErrorAnswer &
    AppAnswer &
    LinkListAnswer &
    BatchBody & { link: Link; note: string; status: string }
>;

export type ApiResponse = HttpResponse<ApiBody>;

/** The link of a single-link answer (201, 200); fails the test on anything else. */
export function linkOf(res: ApiResponse): Link {
  const link = res.body?.link;
  if (!link) throw new Error(`no link in the answer: ${res.status} ${res.text}`);
  return link;
}

/** The body of a batch answer; fails the test on anything else. */
export function batchBody(res: ApiResponse): BatchBody {
  const { body } = res;
  if (body?.results === undefined || body.created === undefined) {
    throw new Error(`not a batch answer: ${res.status} ${res.text}`);
  }
  // The gateway always sends the counts and the results together.
  return body as BatchBody;
}
