import type { AndroidAssociation, IosAssociation } from '@linkservice/contracts';

export const APPLE_APP_SITE_ASSOCIATION_PATH = '/.well-known/apple-app-site-association';
export const ASSET_LINKS_PATH = '/.well-known/assetlinks.json';

/**
 * Apple's current format (iOS 13+, `appIDs` + `components`): every path of the link host opens
 * the app, as every path is a link alias.
 */
export function appleAppSiteAssociation(ios: IosAssociation): unknown {
  return {
    applinks: {
      details: [{ appIDs: [`${ios.teamId}.${ios.bundleId}`], components: [{ '/': '*' }] }],
    },
  };
}

/** Digital Asset Links statement letting the Android app handle every URL of the host. */
export function assetLinks(android: AndroidAssociation): unknown {
  return [
    {
      relation: ['delegate_permission/common.handle_all_urls'],
      target: {
        namespace: 'android_app',
        package_name: android.packageName,
        sha256_cert_fingerprints: android.sha256Fingerprints,
      },
    },
  ];
}
