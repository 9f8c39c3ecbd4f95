import { randomBytes } from 'node:crypto';
import { migrateToLatest } from '@linkservice/db';
import pg from 'pg';

export const LOCAL_POSTGRES = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface ScratchDatabase {
  url: string;
  name: string;
  /** Drops the database, disconnecting whoever still uses it. */
  drop(): Promise<void>;
}

/**
 * Creates a fresh database on the server of `serverUrl` and applies every migration, through the
 * same `migrateToLatest` that `pnpm start` uses. For the bench and for tests that need a database
 * of their own; ordinary tests use the per-run database of testEnvironment().
 */
export async function createMigratedDatabase(
  options: { serverUrl?: string; namePrefix?: string } = {},
): Promise<ScratchDatabase> {
  const url = new URL(options.serverUrl ?? LOCAL_POSTGRES);
  const name = `${options.namePrefix ?? 'linkservice_scratch'}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  url.pathname = `/${name}`;
  const databaseUrl = url.toString();
  await migrateToLatest(databaseUrl);
  return { url: databaseUrl, name, drop: () => dropDatabase(databaseUrl) };
}

export async function dropDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
