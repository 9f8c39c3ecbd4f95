import type { AppAssociationRow, Database, Environment } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

export interface IosAssociation {
  teamId: string;
  bundleId: string;
}

export interface AndroidAssociation {
  packageName: string;
  sha256Fingerprints: string[];
}

/** app_associations: what the link host serves at /.well-known/ per app and environment. */
export class AssociationsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** Sets the iOS pair of one app and environment, keeping its Android settings. */
  async upsertIos(
    appId: string,
    environment: Environment,
    ios: IosAssociation,
  ): Promise<AppAssociationRow> {
    return this.db
      .insertInto('app_associations')
      .values({
        app_id: appId,
        environment,
        ios_team_id: ios.teamId,
        ios_bundle_id: ios.bundleId,
      })
      .onConflict((conflict) =>
        conflict.columns(['app_id', 'environment']).doUpdateSet({
          ios_team_id: (eb) => eb.ref('excluded.ios_team_id'),
          ios_bundle_id: (eb) => eb.ref('excluded.ios_bundle_id'),
          updated_at: sql<Date>`now()`,
        }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }

  /** Sets the Android package and fingerprints of one app and environment, keeping iOS. */
  async upsertAndroid(
    appId: string,
    environment: Environment,
    android: AndroidAssociation,
  ): Promise<AppAssociationRow> {
    return this.db
      .insertInto('app_associations')
      .values({
        app_id: appId,
        environment,
        android_package_name: android.packageName,
        android_sha256_fingerprints: android.sha256Fingerprints,
      })
      .onConflict((conflict) =>
        conflict.columns(['app_id', 'environment']).doUpdateSet({
          android_package_name: (eb) => eb.ref('excluded.android_package_name'),
          android_sha256_fingerprints: (eb) => eb.ref('excluded.android_sha256_fingerprints'),
          updated_at: sql<Date>`now()`,
        }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }
}
