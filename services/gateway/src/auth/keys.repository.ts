import DataLoader from 'dataloader';
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
  return `SELECT ${KEY_COLUMNS}${columns}
   FROM api_keys INNER JOIN apps ON apps.id = api_keys.app_id${join}
   WHERE api_keys.key_hash = $1 AND api_keys.revoked_at IS NULL`;
}

const KEY_COLUMNS = `api_keys.id AS "keyId", api_keys.environment AS "keyEnvironment",
     api_keys.type AS "keyType", apps.id AS "appId", apps.name AS "appName",
     apps.subdomain_key AS "subdomainKey"`;

/**
 * Run for every /api/v1 request whose route has no combined load (KeysRepository): the key of a
 * request alone in its event-loop turn, and the keys presented together in one turn, each row
 * named by its hash: the same key check as activeKeyStatement's, for several hashes at once.
 * Constant statements, built once (named prepared statements unless
 * DATABASE_NAMED_STATEMENTS=false, see constantStatement).
 */
const FIND_ACTIVE_BY_HASH = constantStatement<KeyRow>(activeKeyStatement());
const FIND_ACTIVE_BY_HASHES = constantStatement<KeyRow & { keyHash: Buffer }>(
  `SELECT api_keys.key_hash AS "keyHash", ${KEY_COLUMNS}
   FROM api_keys INNER JOIN apps ON apps.id = api_keys.app_id
   WHERE api_keys.key_hash = ANY($1::bytea[]) AND api_keys.revoked_at IS NULL`,
);

/** Keys presented in one turn are looked up together, at most this many per statement. */
const MAX_KEYS_PER_LOOKUP = 100;

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
  /**
   * Not a cache (`cache: false`): a revocation takes effect on the very next request. It only
   * gathers the lookups asked for in one event-loop turn (setImmediate runs once the turn's I/O
   * callbacks are done, so every request read in it has asked) into one statement: under
   * concurrent load the requests a turn reads share one round trip; a lone request waits for
   * nothing. The statement runs in the first request's deadline scope; the others of its turn
   * started within the same turn, so theirs end no sooner.
   */
  private readonly lookups: DataLoader<Buffer, AuthContext | undefined>;

  constructor(db: Kysely<Database>) {
    this.lookups = new DataLoader(
      async (hashes) => {
        // A key alone in its turn (every request, without concurrent ones): the single-key
        // statement, which costs Postgres and pg less than the array form (test/bench/README.md).
        if (hashes.length === 1) {
          const row = (await executeStatement(db, FIND_ACTIVE_BY_HASH, [hashes[0]])).at(0);
          return [row && toAuthContext(row)];
        }
        const rows = await executeStatement(db, FIND_ACTIVE_BY_HASHES, [hashes]);
        const found = new Map(rows.map((row) => [row.keyHash.toString('hex'), row]));
        return hashes.map((hash) => {
          const row = found.get(hash.toString('hex'));
          return row && toAuthContext(row);
        });
      },
      {
        cache: false,
        maxBatchSize: MAX_KEYS_PER_LOOKUP,
        batchScheduleFn: (dispatch) => setImmediate(dispatch),
      },
    );
  }

  /** The unrevoked key with this hash and its app, in one round trip (shared within a turn). */
  findActiveByHash(keyHash: Buffer): Promise<AuthContext | undefined> {
    return this.lookups.load(keyHash);
  }
}
