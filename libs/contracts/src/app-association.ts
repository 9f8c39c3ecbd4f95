import type { AppAssociationRow } from '@linkservice/db';

export interface IosAssociation {
  teamId: string;
  bundleId: string;
}

export interface AndroidAssociation {
  packageName: string;
  sha256Fingerprints: string[];
}

/** What one app and environment has set for the files its link host serves at /.well-known/. */
export interface AppAssociation {
  ios: IosAssociation | null;
  android: AndroidAssociation | null;
}

export type AppAssociationColumns = Pick<
  AppAssociationRow,
  'ios_team_id' | 'ios_bundle_id' | 'android_package_name' | 'android_sha256_fingerprints'
>;

/** Each platform is all or nothing (the table's check constraints say so too). */
export function toAppAssociation(row: AppAssociationColumns): AppAssociation {
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
