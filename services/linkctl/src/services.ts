import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { AppsRepository } from './apps/apps.repository';
import type { AppsServiceOptions } from './apps/apps.service';
import { AppsService } from './apps/apps.service';
import { KeysRepository } from './keys/keys.repository';
import { KeysService } from './keys/keys.service';

export interface LinkctlServices {
  apps: AppsService;
  keys: KeysService;
}

/** The operator services over one Kysely instance; the caller owns (and closes) the pool. */
export function createLinkctlServices(
  db: Kysely<Database>,
  options: AppsServiceOptions,
): LinkctlServices {
  return {
    apps: new AppsService(new AppsRepository(db), options),
    keys: new KeysService(new KeysRepository(db)),
  };
}
