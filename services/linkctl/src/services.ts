import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { AppsRepository } from './apps/apps.repository';
import type { AppsServiceOptions } from './apps/apps.service';
import { AppsService } from './apps/apps.service';
import { AssociationsRepository } from './associations/associations.repository';
import { AssociationsService } from './associations/associations.service';
import { KeysRepository } from './keys/keys.repository';
import { KeysService } from './keys/keys.service';

/** Every service a command may use; commands get them from here and never build their own. */
export interface LinkctlServices {
  apps: AppsService;
  keys: KeysService;
  associations: AssociationsService;
}

/**
 * linkctl's composition root: the operator services over one Kysely instance; the caller owns
 * (and closes) the pool. A new command's service is one member here.
 */
export function createLinkctlServices(
  db: Kysely<Database>,
  options: AppsServiceOptions,
): LinkctlServices {
  const apps = new AppsService(new AppsRepository(db), options);
  return {
    apps,
    keys: new KeysService(new KeysRepository(db)),
    associations: new AssociationsService(new AssociationsRepository(db), apps, options.linkDomain),
  };
}
