import type { FieldErrors, Link } from '@linkservice/contracts';
import { parseLinkPatch, toLink } from '@linkservice/contracts';
import type { CountedLinkRow, Environment } from '@linkservice/db';
import type { LinkCache } from '@linkservice/link-cache';
import type { AuthContext, Authenticated } from '../auth/auth-context';
import type { ListParams } from './list-params';
import { offsetOf } from './list-params';
import type { LinkListQuery, LinkScope } from './list-query.sql';
import type { LinksRepository } from './links.repository';
import type { ReadYourWrites } from '@linkservice/db';

/** The caller's app and environment, plus what a Link's URL needs: all from the auth context. */
export interface LinkOwner {
  appId: string;
  environment: Environment;
  subdomainKey: string;
}

export function linkOwnerOf(auth: AuthContext): LinkOwner {
  return { appId: auth.appId, environment: auth.environment, subdomainKey: auth.app.subdomainKey };
}

export const ARCHIVE_NOTE =
  'The link was archived. It keeps resolving to its fallback URL, and its alias stays taken: ' +
  'no new link can use it. Archiving cannot be undone.';

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

/** Ids are opaque to callers, but ours are short and plain; anything else cannot exist. */
export const PLAUSIBLE_ID = /^[A-Za-z0-9_-]{1,128}$/;

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
    /** Replica reads' fences: a change must show on the writer's very next read. */
    private readonly readYourWrites?: Pick<ReadYourWrites, 'written' | 'fenceFor'>,
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
    const fences = this.readYourWrites;
    const found = await this.links.findByIdForKey(
      keyHash,
      PLAUSIBLE_ID.test(id) ? id : null,
      fences && ((scope) => fences.fenceFor(scope)),
    );
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
    const scope = scopeOf(owner);
    const result = await this.links.list(scope, query, await this.readYourWrites?.fenceFor(scope));
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
    await this.readYourWrites?.written(scopeOf(owner));
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
