import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, Environment } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { generateSecretKey, hashSecretKey } from '@linkservice/keys';

export interface TenantKey {
  id: string;
  environment: Environment;
  /** The whole secret, as a customer would hold it; only its hash is in the database. */
  secret: string;
}

export interface Tenant {
  appId: string;
  name: string;
  subdomainKey: string;
  live: TenantKey;
  test: TenantKey;
}

export interface TenantOptions {
  name?: string;
  subdomainKey?: string;
  /** Plan link allowance; unlimited when omitted. */
  linkAllowance?: number | null;
}

/**
 * An app with one live and one test key, written straight to the database as the operator CLI
 * would. Each test makes its own tenant instead of sharing or wiping tables, so tests never see
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
  const [live, test] = await Promise.all([
    createKey(db, appId, 'live'),
    createKey(db, appId, 'test'),
  ]);
  return { appId, name, subdomainKey, live, test };
}

/** Inserts an unrevoked key; only its hash is stored, as linkctl does. */
export async function createKey(
  db: Kysely<Database>,
  appId: string,
  environment: Environment,
): Promise<TenantKey> {
  const secret = generateSecretKey(environment);
  const id = newId('key');
  await db
    .insertInto('api_keys')
    .values({ id, app_id: appId, environment, key_hash: hashSecretKey(secret) })
    .execute();
  return { id, environment, secret };
}

export async function revokeKey(db: Kysely<Database>, keyId: string): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('id', '=', keyId)
    .execute();
}
