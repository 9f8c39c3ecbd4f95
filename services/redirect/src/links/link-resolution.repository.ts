import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import type { LinkRef, LinkResolution } from '@linkservice/link-cache';

/** The redirect's read of a link, behind a cache miss. */
export class LinkResolutionRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * The one query behind a cache miss: the link of `alias` in the app whose subdomain key is
   * `subdomainKey`, in `environment`, with its app's iOS deferred-page choice for that environment
   * (off without an association row). Served by apps' unique subdomain_key index, links' unique
   * (app_id, environment, alias) index and app_associations' primary key (app_id, environment).
   */
  async find({ subdomainKey, environment, alias }: LinkRef): Promise<LinkResolution | null> {
    const row = await this.db
      .selectFrom('links')
      .innerJoin('apps', 'apps.id', 'links.app_id')
      .leftJoin('app_associations', (join) =>
        join
          .onRef('app_associations.app_id', '=', 'links.app_id')
          .onRef('app_associations.environment', '=', 'links.environment'),
      )
      .select([
        'links.id',
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
}
