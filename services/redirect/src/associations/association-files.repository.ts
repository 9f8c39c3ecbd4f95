import type { Kysely } from 'kysely';
import type { AppAssociation } from '@linkservice/contracts';
import { toAppAssociation } from '@linkservice/contracts';
import type { Database } from '@linkservice/db';
import type { LinkHost } from '@linkservice/contracts';

/** The app association settings the link host builds its association files from. */
export class AssociationFilesRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The association settings of the app and environment a link host names, if any were set. */
  async find({ subdomainKey, environment }: LinkHost): Promise<AppAssociation | null> {
    const row = await this.db
      .selectFrom('app_associations')
      .innerJoin('apps', 'apps.id', 'app_associations.app_id')
      .select([
        'app_associations.ios_team_id',
        'app_associations.ios_bundle_id',
        'app_associations.android_package_name',
        'app_associations.android_sha256_fingerprints',
      ])
      .where('apps.subdomain_key', '=', subdomainKey)
      .where('app_associations.environment', '=', environment)
      .executeTakeFirst();
    return row ? toAppAssociation(row) : null;
  }
}
