import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { AppsRepository } from './apps/apps.repository';
import type { AppAdminOptions } from './apps/app-admin.service';
import { AppAdminService } from './apps/app-admin.service';
import { AssociationAdminRepository } from './associations/association-admin.repository';
import { AssociationAdminService } from './associations/association-admin.service';
import { KeyAdminRepository } from './keys/key-admin.repository';
import { KeyAdminService } from './keys/key-admin.service';

/** Every service a command may use; commands get them from here and never build their own. */
export interface LinkctlServices {
  apps: AppAdminService;
  keys: KeyAdminService;
  associations: AssociationAdminService;
}

/**
 * linkctl's composition root: the operator services over one Kysely instance; the caller owns
 * (and closes) the pool. A new command's service is one member here.
 */
export function createLinkctlServices(
  db: Kysely<Database>,
  options: AppAdminOptions,
): LinkctlServices {
  const apps = new AppAdminService(new AppsRepository(db), options);
  return {
    apps,
    keys: new KeyAdminService(new KeyAdminRepository(db)),
    associations: new AssociationAdminService(
      new AssociationAdminRepository(db),
      apps,
      options.linkDomain,
    ),
  };
}
