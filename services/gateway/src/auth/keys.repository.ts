import type { Kysely } from 'kysely';
import type { Database, Environment, KeyType } from '@linkservice/db';
import { constantStatement, executeStatement } from '@linkservice/db';
import type { AuthContext } from './auth-context';

/**
 * One key lookup's columns. camelCase aliases, so a statement that also selects a table's own
 * snake_case columns (activeKeyStatement's `read`) never gets two columns of one name.
 */
export interface KeyRow {
  keyId: string;
  keyEnvironment: Environment;
  keyType: KeyType;
  appId: string;
  appName: string;
  subdomainKey: string;
}

/**
 * The statement that finds the unrevoked key whose hash is `$1`, with its app: KeyRow's columns,
 * one row or none. Not cached: a revocation takes effect on the very next request. A route that
 * authenticates and reads in one round trip (a route's combinedLoad) adds its own columns and a
 * LEFT JOIN on `api_keys.app_id` and `api_keys.environment` (its parameters from `$2`), so the
 * key check itself is this one, whichever way it runs.
 */
export function activeKeyStatement(read?: { columns: string; join: string }): string {
  const columns = read ? `, ${read.columns}` : '';
  const join = read ? `\n   ${read.join}` : '';
  return `SELECT api_keys.id AS "keyId", api_keys.environment AS "keyEnvironment",
     api_keys.type AS "keyType", apps.id AS "appId", apps.name AS "appName",
     apps.subdomain_key AS "subdomainKey"${columns}
   FROM api_keys INNER JOIN apps ON apps.id = api_keys.app_id${join}
   WHERE api_keys.key_hash = $1 AND api_keys.revoked_at IS NULL`;
}

/**
 * Runs for every /api/v1 request whose route has no combined load: a constant statement, built
 * once (a named prepared statement unless DATABASE_NAMED_STATEMENTS=false, see constantStatement).
 */
const FIND_ACTIVE_BY_HASH = constantStatement<KeyRow>(activeKeyStatement());

export function toAuthContext(row: KeyRow): AuthContext {
  return {
    keyId: row.keyId,
    appId: row.appId,
    environment: row.keyEnvironment,
    type: row.keyType,
    app: { id: row.appId, name: row.appName, subdomainKey: row.subdomainKey },
  };
}

export class KeysRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The unrevoked key with this hash and its app, in one round trip. */
  async findActiveByHash(keyHash: Buffer): Promise<AuthContext | undefined> {
    const row = (await executeStatement(this.db, FIND_ACTIVE_BY_HASH, [keyHash])).at(0);
    return row && toAuthContext(row);
  }
}
