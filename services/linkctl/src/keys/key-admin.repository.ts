import type { ApiKeyRow, Database, NewApiKey } from '@linkservice/db';
import { primaryWalPosition } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { isPgError } from '../pg-errors';

/** A key as the operator may see it: the hash never leaves the database. */
export type StoredApiKey = Omit<ApiKeyRow, 'key_hash'>;

const VISIBLE_COLUMNS = [
  'id',
  'app_id',
  'environment',
  'type',
  'created_at',
  'revoked_at',
] as const;

export class KeyAdminRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** The stored key, or null when the app does not exist (its foreign key refuses the row). */
  async insert(key: NewApiKey): Promise<StoredApiKey | null> {
    try {
      return await this.db
        .insertInto('api_keys')
        .values(key)
        .returning(VISIBLE_COLUMNS)
        .executeTakeFirstOrThrow();
    } catch (error) {
      if (isPgError(error, '23503')) return null; // foreign_key_violation: no such app
      throw error;
    }
  }

  /**
   * Sets revoked_at on an active key. Null when nothing changed: the key is unknown or was
   * already revoked (a concurrent revoke waits on the row lock, then finds it revoked).
   */
  /** The primary's WAL position now (after a revocation committed): the app's write fence. */
  walPosition(): Promise<bigint> {
    return primaryWalPosition(this.db);
  }

  async revokeIfActive(keyId: string): Promise<StoredApiKey | null> {
    const row = await this.db
      .updateTable('api_keys')
      .set({ revoked_at: sql<Date>`now()` })
      .where('id', '=', keyId)
      .where('revoked_at', 'is', null)
      .returning(VISIBLE_COLUMNS)
      .executeTakeFirst();
    return row ?? null;
  }

  async findById(keyId: string): Promise<StoredApiKey | null> {
    const row = await this.db
      .selectFrom('api_keys')
      .select(VISIBLE_COLUMNS)
      .where('id', '=', keyId)
      .executeTakeFirst();
    return row ?? null;
  }

  /**
   * The app's keys oldest first, or null when the app does not exist: one query, the app row
   * left-joined to its keys, so "no such app" and "no keys yet" are told apart.
   */
  async listForApp(appId: string): Promise<StoredApiKey[] | null> {
    const rows = await this.db
      .selectFrom('apps')
      .leftJoin('api_keys', 'api_keys.app_id', 'apps.id')
      .select([
        'api_keys.id',
        'api_keys.app_id',
        'api_keys.environment',
        'api_keys.type',
        'api_keys.created_at',
        'api_keys.revoked_at',
      ])
      .where('apps.id', '=', appId)
      .orderBy('api_keys.created_at')
      .orderBy('api_keys.id')
      .execute();
    if (rows.length === 0) return null;
    return rows.flatMap(({ id, app_id, environment, type, created_at, revoked_at }) =>
      id !== null && app_id !== null && environment !== null && type !== null && created_at !== null
        ? [{ id, app_id, environment, type, created_at, revoked_at }]
        : [],
    );
  }
}
