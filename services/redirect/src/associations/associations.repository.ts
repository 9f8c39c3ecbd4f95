import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import type { LinkHost } from '../http/host';

export interface AppAssociation {
  ios: { teamId: string; bundleId: string } | null;
  android: { packageName: string; sha256Fingerprints: string[] } | null;
}

/** The association settings of the app and environment a link host names, if any were set. */
export async function findAppAssociation(
  db: Kysely<Database>,
  { subdomainKey, environment }: LinkHost,
): Promise<AppAssociation | null> {
  const row = await db
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
  if (!row) return null;
  return {
    ios:
      row.ios_team_id !== null && row.ios_bundle_id !== null
        ? { teamId: row.ios_team_id, bundleId: row.ios_bundle_id }
        : null,
    android:
      row.android_package_name !== null && row.android_sha256_fingerprints !== null
        ? {
            packageName: row.android_package_name,
            sha256Fingerprints: row.android_sha256_fingerprints,
          }
        : null,
  };
}
