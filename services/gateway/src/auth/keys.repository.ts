import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import type { AuthContext } from './auth-context';

export class KeysRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * The unrevoked key with this hash and its app, in one round trip. Not cached: a revocation
   * takes effect on the very next request.
   */
  async findActiveByHash(keyHash: Buffer): Promise<AuthContext | undefined> {
    const row = await this.db
      .selectFrom('api_keys')
      .innerJoin('apps', 'apps.id', 'api_keys.app_id')
      .select([
        'api_keys.id as keyId',
        'api_keys.environment',
        'apps.id as appId',
        'apps.name',
        'apps.subdomain_key as subdomainKey',
      ])
      .where('api_keys.key_hash', '=', keyHash)
      .where('api_keys.revoked_at', 'is', null)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      keyId: row.keyId,
      appId: row.appId,
      environment: row.environment,
      app: { id: row.appId, name: row.name, subdomainKey: row.subdomainKey },
    };
  }
}
