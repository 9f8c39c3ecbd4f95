import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database, Environment } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { generateSecretKey, hashSecretKey } from '@linkservice/keys';

export interface TestKey {
  id: string;
  /** The plain secret, as a customer holds it. */
  secret: string;
  environment: Environment;
}

export interface TestTenant {
  app: { id: string; name: string; subdomainKey: string };
  live: TestKey;
  test: TestKey;
}

/** Inserts an unrevoked key; only its hash is stored, as linkctl does. */
export async function createKey(
  db: Kysely<Database>,
  appId: string,
  environment: Environment,
): Promise<TestKey> {
  const secret = generateSecretKey(environment);
  const id = newId('key');
  await db
    .insertInto('api_keys')
    .values({ id, app_id: appId, environment, key_hash: hashSecretKey(secret) })
    .execute();
  return { id, secret, environment };
}

export async function revokeKey(db: Kysely<Database>, keyId: string): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ revoked_at: new Date() })
    .where('id', '=', keyId)
    .execute();
}

/**
 * A fresh app with one live and one test key: each test makes its own tenant instead of wiping
 * tables, so tests never see each other's data.
 */
export async function createTenant(
  db: Kysely<Database>,
  {
    name = 'Test app',
    linkAllowance = null,
  }: { name?: string; linkAllowance?: number | null } = {},
): Promise<TestTenant> {
  const id = newId('app');
  const subdomainKey = `t${randomBytes(6).toString('hex')}`;
  await db
    .insertInto('apps')
    .values({ id, name, subdomain_key: subdomainKey, link_allowance: linkAllowance })
    .execute();
  const [live, test] = await Promise.all([createKey(db, id, 'live'), createKey(db, id, 'test')]);
  return { app: { id, name, subdomainKey }, live, test };
}
