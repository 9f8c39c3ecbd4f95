import type { Kysely } from 'kysely';
import type { Database, FenceLookup } from '@linkservice/db';
import { NO_FENCE, ReplicaReads } from '@linkservice/db';
import type { LinkRef, LinkResolution } from '@linkservice/link-cache';

export interface LinkResolutionRepositoryOptions {
  /** Where misses are read (DATABASE_READ_URL); the primary (`db`) by default. */
  reads?: ReplicaReads;
  /** The gateway's write fences: a link its app just changed is not read from a stale replica. */
  fenceOf?: FenceLookup;
}

/** The redirect's read of a link, behind a cache miss. */
export class LinkResolutionRepository {
  private readonly reads: ReplicaReads;
  private readonly fenceOf: FenceLookup;

  constructor(db: Kysely<Database>, options: LinkResolutionRepositoryOptions = {}) {
    this.reads = options.reads ?? new ReplicaReads({ primary: db, replica: undefined });
    this.fenceOf = options.fenceOf ?? NO_FENCE;
  }

  /**
   * The one query behind a cache miss: the link of `alias` in the app whose subdomain key is
   * `subdomainKey`, in `environment`, with its app's iOS deferred-page choice for that environment
   * (off without an association row). Served by apps' unique subdomain_key index, links' unique
   * (app_id, environment, alias) index and app_associations' primary key (app_id, environment).
   *
   * On a replica the answer is served only when it is found (a miss asks the primary before the
   * 404, so a link redirects right after its 201) and fresh: the replica had replayed its app's
   * last write (the gateway's write fence) and, when given, `freshAfter` (ms epoch, e.g. the
   * time the cache entry was invalidated).
   */
  async find(
    { subdomainKey, environment, alias }: LinkRef,
    freshAfter?: number,
  ): Promise<LinkResolution | null> {
    const row = await this.reads.read({
      run: (db) => this.findOn(db, { subdomainKey, environment, alias }),
      found: (found) => found !== undefined,
      fence: async (found) => {
        if (!found) return 'unknown';
        const fence = await this.fenceOf({ appId: found.app_id, environment });
        if (fence === 'unknown') return fence;
        return freshAfter === undefined ? fence : { ...fence, timeMs: freshAfter };
      },
    });
    if (!row) return null;
    return {
      linkId: row.id,
      webFallbackUrl: row.web_fallback_url,
      iosFallbackUrl: row.ios_fallback_url,
      expiresAt: row.expires_at ? row.expires_at.getTime() : null,
      archived: row.archived_at !== null,
      title: row.title,
      iosDeferredPage: row.ios_deferred_page === true,
    };
  }

  private findOn(db: Kysely<Database>, { subdomainKey, environment, alias }: LinkRef) {
    return db
      .selectFrom('links')
      .innerJoin('apps', 'apps.id', 'links.app_id')
      .leftJoin('app_associations', (join) =>
        join
          .onRef('app_associations.app_id', '=', 'links.app_id')
          .onRef('app_associations.environment', '=', 'links.environment'),
      )
      .select([
        'links.id',
        'links.app_id',
        'links.web_fallback_url',
        'links.ios_fallback_url',
        'links.expires_at',
        'links.archived_at',
        'links.title',
        'app_associations.ios_deferred_page',
      ])
      .where('apps.subdomain_key', '=', subdomainKey)
      .where('links.environment', '=', environment)
      .where('links.alias', '=', alias)
      .executeTakeFirst();
  }
}
