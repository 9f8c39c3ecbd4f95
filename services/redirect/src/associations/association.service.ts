import type { LinkHost } from '@linkservice/contracts';
import {
  APPLE_APP_SITE_ASSOCIATION_PATH,
  ASSET_LINKS_PATH,
  appleAppSiteAssociation,
  assetLinks,
} from './association-files';
import type { AssociationFilesRepository } from './association-files.repository';

export type AssociationFile = 'apple-app-site-association' | 'assetlinks';

/** Which association file a path asks for, or null for any other path. */
export function associationFileFor(path: string): AssociationFile | null {
  if (path === APPLE_APP_SITE_ASSOCIATION_PATH) return 'apple-app-site-association';
  if (path === ASSET_LINKS_PATH) return 'assetlinks';
  return null;
}

/**
 * The document to serve, or null when the app has not set that platform up for this
 * environment. Read from Postgres each time: platforms fetch these rarely (Apple through its
 * CDN), and an operator's change shows at once.
 */
export async function associationDocument(
  associations: AssociationFilesRepository,
  host: LinkHost,
  file: AssociationFile,
): Promise<unknown> {
  const association = await associations.find(host);
  switch (file) {
    case 'apple-app-site-association':
      return association?.ios ? appleAppSiteAssociation(association.ios) : null;
    case 'assetlinks':
      return association?.android ? assetLinks(association.android) : null;
  }
}
