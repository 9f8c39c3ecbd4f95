import type { Kysely } from 'kysely';
import type { Database, Environment } from '@linkservice/db';
import { executePrepared, preparedStatement } from '@linkservice/db';
import type { AuthContext } from './auth-context';

interface KeyRow {
  keyId: string;
  environment: Environment;
  appId: string;
  name: string;
  subdomainKey: string;
}

/**
 * Runs before every /api/v1 request, so it is a prepared statement: built once, and parsed and
 * planned once per connection rather than on every request.
 */
const FIND_ACTIVE_BY_HASH = preparedStatement<KeyRow>(
  'gateway_key_by_hash',
  `SELECT api_keys.id AS "keyId", api_keys.environment, apps.id AS "appId", apps.name,
     apps.subdomain_key AS "subdomainKey"
   FROM api_keys INNER JOIN apps ON apps.id = api_keys.app_id
   WHERE api_keys.key_hash = $1 AND api_keys.revoked_at IS NULL`,
);

export class KeysRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * The unrevoked key with this hash and its app, in one round trip. Not cached: a revocation
   * takes effect on the very next request.
   */
  async findActiveByHash(keyHash: Buffer): Promise<AuthContext | undefined> {
    const row = (await executePrepared(this.db, FIND_ACTIVE_BY_HASH, [keyHash])).at(0);
    if (!row) return undefined;
    return {
      keyId: row.keyId,
      appId: row.appId,
      environment: row.environment,
      app: { id: row.appId, name: row.name, subdomainKey: row.subdomainKey },
    };
  }
}
