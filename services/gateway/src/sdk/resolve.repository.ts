import type { Kysely } from 'kysely';
import type { Database, Environment, FenceLookup } from '@linkservice/db';
import { fenceOfFirstRow, NO_FENCE } from '@linkservice/db';
import { constantStatement, executeStatement, ReplicaReads } from '@linkservice/db';
import type { OpenedLinkUrl } from '@linkservice/contracts';
import type { AuthContext } from '../auth/auth-context';
import type { KeyRow } from '../auth/keys.repository';
import { activeKeyStatement, toAuthContext } from '../auth/keys.repository';

/** What resolve reads of a link; null in every column when the LEFT JOIN found none. */
interface ResolvedColumns {
  linkId: string | null;
  linkAlias: string | null;
  deepLinkData: Record<string, unknown> | null;
  expiresAt: Date | null;
  archivedAt: Date | null;
  dbNow: Date;
}

/**
 * POST /sdk/resolve, key check included: the key lookup's statement with the link LEFT JOINed
 * by alias, only in the key's own app and environment and only when the opened URL's host is
 * that app's host in that environment ($3, $4). No row: no active key has the hash. Null link
 * columns: the key is good, and the URL names no link it may read.
 */
const RESOLVE_FOR_KEY = constantStatement<KeyRow & ResolvedColumns>(
  activeKeyStatement({
    columns: `links.id AS "linkId", links.alias AS "linkAlias",
     links.deep_link_data AS "deepLinkData", links.expires_at AS "expiresAt",
     links.archived_at AS "archivedAt", now() AS "dbNow"`,
    join: `LEFT JOIN links ON links.app_id = api_keys.app_id
     AND links.environment = api_keys.environment AND links.alias = $2
     AND apps.subdomain_key = $3 AND api_keys.environment = $4`,
  }),
);

/** The link an opened URL names: its host (app and environment) and its alias. */
export type OpenedLinkRef = Pick<OpenedLinkUrl, 'host' | 'alias'>;

export interface ResolvableLink {
  id: string;
  alias: string;
  environment: Environment;
  deepLinkData: Record<string, unknown> | null;
  expiresAt: Date | null;
  archivedAt: Date | null;
}

/** What a publishable key's resolve found: the key's context, and the link when it may read it. */
export interface KeyedResolve {
  auth: AuthContext;
  link: ResolvableLink | undefined;
  /** The database clock of the read, so expiry is judged as the API's status judges it. */
  now: Date;
}

export class ResolveRepository {
  private readonly reads: ReplicaReads;

  /** `reads`: where resolve reads (DATABASE_READ_URL); the primary (`db`) by default. */
  constructor(db: Kysely<Database>, reads?: ReplicaReads) {
    this.reads = reads ?? new ReplicaReads({ primary: db, replica: undefined });
  }

  /**
   * The active key with this hash and, when `ref` names a link of the key's app and environment,
   * that link: one round trip. A null `ref` (a URL that names no link) still checks the key in
   * the same statement. Undefined when no active key has the hash.
   */
  async findForKey(
    keyHash: Buffer,
    ref: OpenedLinkRef | null,
    fenceOf: FenceLookup = NO_FENCE,
  ): Promise<KeyedResolve | undefined> {
    const parameters = [
      keyHash,
      ref?.alias ?? null,
      ref?.host.subdomainKey ?? null,
      ref?.host.environment ?? null,
    ];
    const rows = await this.reads.read({
      run: (db) => executeStatement(db, RESOLVE_FOR_KEY, parameters),
      // No key or no link on the replica (made a moment ago): ask the primary.
      found: (rows) => rows.at(0)?.linkId != null,
      fence: fenceOfFirstRow(fenceOf, (row) => ({
        appId: row.appId,
        environment: row.keyEnvironment,
      })),
    });
    const found = rows.at(0);
    if (!found) return undefined;
    const { keyId, keyEnvironment, keyType, appId, appName, subdomainKey } = found;
    const auth = toAuthContext({ keyId, keyEnvironment, keyType, appId, appName, subdomainKey });
    // Every link has an id and an alias: null ones are the LEFT JOIN finding none.
    const link: ResolvableLink | undefined =
      found.linkId === null || found.linkAlias === null
        ? undefined
        : {
            id: found.linkId,
            alias: found.linkAlias,
            environment: keyEnvironment,
            deepLinkData: found.deepLinkData,
            expiresAt: found.expiresAt,
            archivedAt: found.archivedAt,
          };
    return { auth, link, now: found.dbNow };
  }
}
