import type { FieldErrors, Link } from '@linkservice/contracts';
import { parseLinkPatch, toLink } from '@linkservice/contracts';
import type { CountedLinkRow, Environment } from '@linkservice/db';
import type { LinkCache } from '@linkservice/link-cache';
import type { AuthContext, Authenticated } from '../auth/auth-context';
import type {
  LinkListQuery,
  LinkScope,
  LinkSort,
  LinkStatusFilter,
  LinksRepository,
} from './links.repository';

/** The caller's app and environment, plus what a Link's URL needs: all from the auth context. */
export interface LinkOwner {
  appId: string;
  environment: Environment;
  subdomainKey: string;
}

export function linkOwnerOf(auth: AuthContext): LinkOwner {
  return { appId: auth.appId, environment: auth.environment, subdomainKey: auth.app.subdomainKey };
}

export const DEFAULT_PER_PAGE = 25;
export const MAX_PER_PAGE = 200;

export const ARCHIVE_NOTE =
  'The link was archived. It keeps resolving to its fallback URL, and its alias stays taken: ' +
  'no new link can use it. Archiving cannot be undone.';

export interface ListParams {
  search: string | undefined;
  tag: string | undefined;
  status: LinkStatusFilter | undefined;
  sort: LinkSort;
  page: number;
  perPage: number;
}

export interface LinkList {
  links: Link[];
  pagination: { page: number; perPage: number; total: number; pageCount: number };
}

export type UpdateOutcome =
  | { kind: 'updated'; link: Link }
  | { kind: 'not_found' }
  | { kind: 'archived' }
  | { kind: 'invalid'; fieldErrors: FieldErrors };

export type ArchiveOutcome =
  | { kind: 'archived'; link: Link; note: string }
  | { kind: 'not_found' }
  | { kind: 'already_archived' };

const STATUSES: readonly LinkStatusFilter[] = ['active', 'archived', 'expired'];
const SORTS: readonly LinkSort[] = ['newest', 'oldest', 'alias', 'clicks'];

/** Ids are opaque to callers, but ours are short and plain; anything else cannot exist. */
const PLAUSIBLE_ID = /^[A-Za-z0-9_-]{1,128}$/;

function oneOf<T extends string>(allowed: readonly T[], value: unknown): T | undefined {
  return allowed.find((candidate) => candidate === value);
}

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

/**
 * Rows skipped before a page. No app holds anywhere near 2^53 links, so any larger offset reads
 * the same empty page; capping keeps it an integer Postgres takes as a bigint (a huge page times
 * perPage would be out of bigint range, or printed as `1e+21`, and fail the statement).
 */
function offsetOf(page: number, perPage: number): number {
  return Math.min((page - 1) * perPage, Number.MAX_SAFE_INTEGER);
}

/** A filter given as one non-empty string; repeated or empty parameters filter nothing. */
function filterText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * GET /links query parameters, with the fallbacks of decisions.md "Lists": nothing here is ever
 * an error; an unusable value means the default.
 */
export function parseListParams(query: Record<string, unknown>): ListParams {
  return {
    search: filterText(query.search),
    tag: filterText(query.tag),
    status: oneOf(STATUSES, query.status),
    sort: oneOf(SORTS, query.sort) ?? 'newest',
    page: pageOf(query.page),
    perPage: perPageOf(query.perPage),
  };
}

/**
 * Text no stored link can contain matches nothing: NUL (Postgres text cannot hold it), and for
 * search the unit separator that joins the fields inside search_text (a match across two fields
 * would be a false hit).
 */
function cannotMatch(params: ListParams): boolean {
  return (
    params.search?.includes('\u0000') === true ||
    params.search?.includes('\u001f') === true ||
    params.tag?.includes('\u0000') === true
  );
}

/**
 * Reading, changing, archiving and listing the links of the caller's app and environment. A link
 * of another app or environment is "not found", exactly like a missing one.
 */
export class LinksService {
  constructor(
    private readonly links: LinksRepository,
    private readonly linkDomain: string,
    /** The link host's resolution cache: a change must show on the very next redirect. */
    private readonly linkCache: Pick<LinkCache, 'invalidate'>,
  ) {}

  /**
   * GET by id, authenticating in the same round trip: undefined when no active key has this
   * hash; else the key's context and the link of its app and environment, if there is one.
   */
  async getForKey(
    keyHash: Buffer,
    id: string,
  ): Promise<Authenticated<Link | undefined> | undefined> {
    // An id that cannot exist still needs the key checked; null matches no link.
    const found = await this.links.findByIdForKey(keyHash, PLAUSIBLE_ID.test(id) ? id : null);
    if (!found) return undefined;
    const { auth, link } = found;
    return { auth, loaded: link && this.present(linkOwnerOf(auth), link.row, link.now) };
  }

  /**
   * PATCH. Precedence: 404 for a missing link, then 409 for an archived one, then 422 for an
   * invalid body: an archived link cannot change whatever the body says. The common case (a
   * valid body) costs one conditional UPDATE; only when it fails does a second query say why.
   */
  async update(
    owner: LinkOwner,
    id: string,
    body: Record<string, unknown>,
  ): Promise<UpdateOutcome> {
    if (!PLAUSIBLE_ID.test(id)) return { kind: 'not_found' };
    const scope = scopeOf(owner);
    // The stored alias is not known yet; a string alias is assumed current here and enforced
    // by the UPDATE's WHERE clause. Any other alias value fails the parse, as it must.
    const sentAlias = typeof body.alias === 'string' ? body.alias : undefined;
    const provisional = parseLinkPatch(body, { alias: sentAlias ?? '' });

    if (provisional.ok && Object.keys(provisional.changes).length > 0) {
      const row = await this.links.updateActive(scope, id, provisional.changes, sentAlias);
      if (row) return { kind: 'updated', link: await this.afterChange(owner, row) };
    }

    // `{}`, an invalid body, or the UPDATE matched nothing: read the link to say why.
    const found = await this.links.findById(scope, id);
    if (!found) return { kind: 'not_found' };
    if (found.row.archived_at) return { kind: 'archived' };
    const parsed = parseLinkPatch(body, { alias: found.row.alias });
    if (!parsed.ok) return { kind: 'invalid', fieldErrors: parsed.fieldErrors };
    if (Object.keys(parsed.changes).length === 0) {
      return { kind: 'updated', link: this.present(owner, found.row, found.now) };
    }
    // A valid change to an active link with this alias would have matched the UPDATE, and an
    // archived link never becomes active again: this is a broken invariant, not a user error.
    throw new Error(`conditional update of active link ${id} matched no row`);
  }

  /** DELETE: archives once; a second archive is a conflict, never a silent success. */
  async archive(owner: LinkOwner, id: string): Promise<ArchiveOutcome> {
    if (!PLAUSIBLE_ID.test(id)) return { kind: 'not_found' };
    const scope = scopeOf(owner);
    const row = await this.links.archiveActive(scope, id);
    if (row) {
      return { kind: 'archived', link: await this.afterChange(owner, row), note: ARCHIVE_NOTE };
    }
    const state = await this.links.stateOf(scope, id);
    return state === 'missing' ? { kind: 'not_found' } : { kind: 'already_archived' };
  }

  async list(owner: LinkOwner, params: ListParams): Promise<LinkList> {
    const { page, perPage } = params;
    if (cannotMatch(params)) {
      return { links: [], pagination: { page, perPage, total: 0, pageCount: 0 } };
    }
    const query: LinkListQuery = {
      search: params.search,
      tag: params.tag,
      status: params.status,
      sort: params.sort,
      limit: perPage,
      offset: offsetOf(page, perPage),
    };
    const result = await this.links.list(scopeOf(owner), query);
    return {
      links: result.rows.map((row) => this.present(owner, row, result.now)),
      pagination: {
        page,
        perPage,
        total: result.total,
        pageCount: Math.ceil(result.total / perPage),
      },
    };
  }

  /**
   * Every committed change to a link (PATCH, archive) passes through here before it is
   * answered, so anything that must follow a change, such as dropping the link host's cached
   * resolution of this alias, belongs in this one place.
   */
  private async afterChange(owner: LinkOwner, row: CountedLinkRow): Promise<Link> {
    // After the commit, before the answer. If Redis cannot take it the request fails (503):
    // the change is saved, but the caller must not be told it is live when the link host may
    // still serve the old resolution (until its cache TTL).
    await this.linkCache.invalidate([
      { subdomainKey: owner.subdomainKey, environment: owner.environment, alias: row.alias },
    ]);
    return this.present(owner, row);
  }

  /** `now`: the database clock of the read, so status agrees with the SQL status filter. */
  private present(owner: LinkOwner, row: CountedLinkRow, now?: Date): Link {
    return toLink(row, { subdomainKey: owner.subdomainKey, linkDomain: this.linkDomain, now });
  }
}

function scopeOf(owner: LinkOwner): LinkScope {
  return { appId: owner.appId, environment: owner.environment };
}
