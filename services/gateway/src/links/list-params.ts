import { z } from 'zod';
import type { LinkStatus } from '@linkservice/contracts';
import { LINK_STATUSES } from '@linkservice/contracts';

/**
 * The orders of GET /links, each with the words the API document gives it. This table is the one
 * definition of a list sort: the parser, the document's enum and description, and through the
 * document the client's `LinkSort` (`pnpm openapi`) all derive from it, and list-query.sql.ts
 * must give every entry its ORDER BY (it does not compile until it does). A new sort: an entry
 * here, its order in list-query.sql.ts, and the index that walks it (a migration).
 */
export const LIST_SORTS = {
  newest: 'createdAt desc',
  oldest: 'createdAt asc',
  alias: 'ascending by code point',
  clicks: 'clickCount desc',
} as const;

export type LinkSort = keyof typeof LIST_SORTS;

export const DEFAULT_SORT = 'newest' satisfies LinkSort;
export const DEFAULT_PER_PAGE = 25;
export const MAX_PER_PAGE = 200;

/** The status filter takes exactly a link's statuses. */
export type LinkStatusFilter = LinkStatus;

export const SORT_NAMES = Object.keys(LIST_SORTS) as [LinkSort, ...LinkSort[]];

const sortParam = z.enum(SORT_NAMES);
const statusParam = z.enum(LINK_STATUSES);

export interface ListParams {
  search: string | undefined;
  tag: string | undefined;
  status: LinkStatusFilter | undefined;
  sort: LinkSort;
  page: number;
  perPage: number;
}

/**
 * GET /links query parameters, with the fallbacks of decisions.md "Lists": nothing here is ever
 * an error; an unusable value means the default.
 */
export function parseListParams(query: Record<string, unknown>): ListParams {
  return {
    search: filterText(query.search),
    tag: filterText(query.tag),
    status: statusParam.safeParse(query.status).data,
    sort: sortParam.safeParse(query.sort).data ?? DEFAULT_SORT,
    page: pageOf(query.page),
    perPage: perPageOf(query.perPage),
  };
}

/** The same parameters as the API document shows them: nothing in the query is ever an error. */
export const listQuerySchema = z.object({
  search: z.string().optional().meta({
    description:
      'Case-insensitive substring of alias, title, campaign, channel or feature. Empty or repeated: no filter.',
    example: 'spring',
  }),
  tag: z.string().optional().meta({
    description: 'Exact, case-sensitive match of one tag. Empty or repeated: no filter.',
    example: 'email',
  }),
  status: statusParam.optional().meta({
    description:
      'Only links of this status. Default: all statuses; an unrecognised value falls back to the default without error.',
  }),
  sort: sortParam.default(DEFAULT_SORT).meta({
    description: `${Object.entries(LIST_SORTS)
      .map(([sort, order]) => `\`${sort}\` ${order}`)
      .join(
        ', ',
      )}; ties break by id. An unrecognised value falls back to \`${DEFAULT_SORT}\` without error.`,
  }),
  page: z.int().min(1).default(1).meta({
    description:
      '1-based. Missing, not an integer or < 1: 1. A page past the end is `links: []` with true pagination.',
  }),
  perPage: z
    .int()
    .min(1)
    .default(DEFAULT_PER_PAGE)
    .meta({
      description: `Missing, not an integer or < 1: ${DEFAULT_PER_PAGE}; values above ${MAX_PER_PAGE} are capped to ${MAX_PER_PAGE} without error.`,
    }),
});

/**
 * An integer >= 1 written in plain decimal digits, however many (`99999999999999999999` is an
 * integer, not a non-integer), else undefined (`2.5`, `1e3`, `abc`, `0`, `-1`). Digits only give
 * a finite number or, past ~309 digits, Infinity; never NaN.
 */
function positiveDecimal(value: unknown): number | undefined {
  if (typeof value !== 'string' || !/^\d+$/.test(value)) return undefined;
  const number = Number(value);
  return number >= 1 ? number : undefined;
}

/**
 * page: any integer >= 1 is that page, past the end or not. Pages beyond 2^53-1 are all the same
 * empty page past the end, so they read as 2^53-1: pagination.page is then an integer that JSON
 * prints in plain digits (1e21 and up, and Infinity as null, would not parse as one) and that an
 * int64 or a double holds exactly.
 */
function pageOf(value: unknown): number {
  const page = positiveDecimal(value);
  return page === undefined ? 1 : Math.min(page, Number.MAX_SAFE_INTEGER);
}

/** perPage: capped at MAX_PER_PAGE however many digits it has (the spec caps "values above 200"). */
function perPageOf(value: unknown): number {
  const perPage = positiveDecimal(value);
  return perPage === undefined ? DEFAULT_PER_PAGE : Math.min(perPage, MAX_PER_PAGE);
}

/** A filter given as one non-empty string; repeated or empty parameters filter nothing. */
function filterText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Rows skipped before a page. No app holds anywhere near 2^53 links, so any larger offset reads
 * the same empty page; capping keeps it an integer Postgres takes as a bigint (a huge page times
 * perPage would be out of bigint range, or printed as `1e+21`, and fail the statement).
 */
export function offsetOf(page: number, perPage: number): number {
  return Math.min((page - 1) * perPage, Number.MAX_SAFE_INTEGER);
}
