import type { AndroidAssociation, IosAssociation } from '@linkservice/contracts';
import type { AppAssociationRow, Database, Environment } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/**
 * The columns of one platform: setting or clearing one platform never touches the other's. The
 * deferred page is part of the iOS settings; left out, an update keeps it as it is.
 */
type PlatformColumns =
  | (Pick<AppAssociationRow, 'ios_team_id' | 'ios_bundle_id'> & { ios_deferred_page?: boolean })
  | Pick<AppAssociationRow, 'android_package_name' | 'android_sha256_fingerprints'>;

/** The table's check allows the deferred page only with iOS set: clearing iOS turns it off. */
const NO_IOS = {
  ios_team_id: null,
  ios_bundle_id: null,
  ios_deferred_page: false,
} satisfies PlatformColumns;
const NO_ANDROID = {
  android_package_name: null,
  android_sha256_fingerprints: null,
} satisfies PlatformColumns;

/** app_associations: what the link host serves at /.well-known/ per app and environment. */
export class AssociationAdminRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Sets the iOS pair of one app and environment, keeping its Android settings. `deferredPage`
   * undefined keeps the row's current setting (off for a new row).
   */
  upsertIos(
    appId: string,
    environment: Environment,
    ios: IosAssociation,
    deferredPage: boolean | undefined,
  ): Promise<AppAssociationRow> {
    return this.upsert(appId, environment, {
      ios_team_id: ios.teamId,
      ios_bundle_id: ios.bundleId,
      ...(deferredPage === undefined ? {} : { ios_deferred_page: deferredPage }),
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

  /** Clears the iOS settings of one app and environment, keeping Android; undefined when no row. */
  clearIos(appId: string, environment: Environment): Promise<AppAssociationRow | undefined> {
    return this.clear(appId, environment, NO_IOS);
  }

  /** Clears the Android settings of one app and environment, keeping iOS; undefined when no row. */
  clearAndroid(appId: string, environment: Environment): Promise<AppAssociationRow | undefined> {
    return this.clear(appId, environment, NO_ANDROID);
  }

  /**
   * Deletes the row of one app and environment only while neither platform is set (the check
   * constraints make one column per platform enough), so a platform set since it was cleared
   * survives. Not folded into the clearing UPDATE: Postgres ignores a DELETE of a row that the
   * same statement updates.
   */
  async deleteIfEmpty(appId: string, environment: Environment): Promise<void> {
    await this.db
      .deleteFrom('app_associations')
      .where('app_id', '=', appId)
      .where('environment', '=', environment)
      .where('ios_team_id', 'is', null)
      .where('android_package_name', 'is', null)
      .execute();
  }

  private clear(
    appId: string,
    environment: Environment,
    columns: PlatformColumns,
  ): Promise<AppAssociationRow | undefined> {
    return this.db
      .updateTable('app_associations')
      .set({ ...columns, updated_at: sql<Date>`now()` })
      .where('app_id', '=', appId)
      .where('environment', '=', environment)
      .returningAll()
      .executeTakeFirst();
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
