import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, Environment, KeyType } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { generatePublishableKey, generateSecretKey, hashSecretKey } from '@linkservice/keys';

export interface TenantKey {
  id: string;
  environment: Environment;
  type: KeyType;
  /**
   * The key's whole text (`ls_sk_…` or `ls_pk_…`), as a customer would hold it; only its hash is
   * in the database.
   */
  secret: string;
}

export interface Tenant {
  appId: string;
  name: string;
  subdomainKey: string;
  /** Secret keys: the server API. */
  live: TenantKey;
  test: TenantKey;
  /** Publishable keys: the app interface (/api/v1/sdk). */
  publishable: { live: TenantKey; test: TenantKey };
}

export interface TenantOptions {
  name?: string;
  subdomainKey?: string;
  /** Plan link allowance; unlimited when omitted. */
  linkAllowance?: number | null;
}

/**
 * An app with a secret and a publishable key in each environment, written straight to the
 * database as the operator CLI would. Each test makes its own tenant instead of sharing or wiping tables, so tests never see
 * each other's data.
 */
export async function createTenant(
  db: Kysely<Database>,
  options: TenantOptions = {},
): Promise<Tenant> {
  const appId = newId('app');
  const subdomainKey = options.subdomainKey ?? `t${randomBytes(6).toString('hex')}`;
  const name = options.name ?? `Tenant ${subdomainKey}`;
  await db
    .insertInto('apps')
    .values({
      id: appId,
      name,
      subdomain_key: subdomainKey,
      link_allowance: options.linkAllowance ?? null,
    })
    .execute();
  const [live, test, publishableLive, publishableTest] = await Promise.all([
    createKey(db, appId, 'live'),
    createKey(db, appId, 'test'),
    createKey(db, appId, 'live', 'publishable'),
    createKey(db, appId, 'test', 'publishable'),
  ]);
  return {
    appId,
    name,
    subdomainKey,
    live,
    test,
    publishable: { live: publishableLive, test: publishableTest },
  };
}

/** Inserts an unrevoked key (secret unless `type` says otherwise); only its hash is stored, as linkctl does. */
export async function createKey(
  db: Kysely<Database>,
  appId: string,
  environment: Environment,
  type: KeyType = 'secret',
): Promise<TenantKey> {
  const secret =
    type === 'publishable' ? generatePublishableKey(environment) : generateSecretKey(environment);
  const id = newId('key');
  await db
    .insertInto('api_keys')
    .values({ id, app_id: appId, environment, type, key_hash: hashSecretKey(secret) })
    .execute();
  return { id, environment, type, secret };
}

export async function revokeKey(db: Kysely<Database>, keyId: string): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('id', '=', keyId)
    .execute();
}
