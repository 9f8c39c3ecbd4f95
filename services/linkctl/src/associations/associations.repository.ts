import type { AndroidAssociation, IosAssociation } from '@linkservice/contracts';
import type { AppAssociationRow, Database, Environment } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/** The columns of one platform: setting one platform never touches the other's. */
type PlatformColumns =
  | Pick<AppAssociationRow, 'ios_team_id' | 'ios_bundle_id'>
  | Pick<AppAssociationRow, 'android_package_name' | 'android_sha256_fingerprints'>;

/** app_associations: what the link host serves at /.well-known/ per app and environment. */
export class AssociationsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** Sets the iOS pair of one app and environment, keeping its Android settings. */
  upsertIos(
    appId: string,
    environment: Environment,
    ios: IosAssociation,
  ): Promise<AppAssociationRow> {
    return this.upsert(appId, environment, {
      ios_team_id: ios.teamId,
      ios_bundle_id: ios.bundleId,
    });
  }

  /** Sets the Android package and fingerprints of one app and environment, keeping iOS. */
  upsertAndroid(
    appId: string,
    environment: Environment,
    android: AndroidAssociation,
  ): Promise<AppAssociationRow> {
    return this.upsert(appId, environment, {
      android_package_name: android.packageName,
      android_sha256_fingerprints: android.sha256Fingerprints,
    });
  }

  /** One statement: creates the row, or overwrites only `columns` of the existing one. */
  private upsert(
    appId: string,
    environment: Environment,
    columns: PlatformColumns,
  ): Promise<AppAssociationRow> {
    return this.db
      .insertInto('app_associations')
      .values({ app_id: appId, environment, ...columns })
      .onConflict((conflict) =>
        conflict
          .columns(['app_id', 'environment'])
          .doUpdateSet({ ...columns, updated_at: sql<Date>`now()` }),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }
}
