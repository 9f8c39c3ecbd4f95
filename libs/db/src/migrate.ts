import { Kysely, PostgresDialect } from 'kysely';
import type { MigrationResultSet } from 'kysely/migration';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { migrations } from './migrations';

/** Creates the database named in `connectionString` when it does not exist yet. */
export async function ensureDatabase(connectionString: string): Promise<boolean> {
  const url = new URL(connectionString);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    // Identifiers cannot be bound as parameters; escape as pg's own escapeIdentifier does.
    await client
      .query(`CREATE DATABASE ${client.escapeIdentifier(name)}`)
      .catch((error: unknown) => {
        // Another process created it between our check and our CREATE.
        if ((error as { code?: string }).code !== '42P04') throw error;
      });
    return true;
  } finally {
    await client.end();
  }
}

export interface MigrateOutcome {
  databaseCreated: boolean;
  applied: string[];
}

/** The one migrate entry point: used by `pnpm start`, `linkctl migrate`, the tests and the chart. */
export async function migrateToLatest(connectionString: string): Promise<MigrateOutcome> {
  const databaseCreated = await ensureDatabase(connectionString);
  const db = new Kysely<unknown>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString, max: 1 }) }),
  });
  try {
    const migrator = new Migrator({
      db,
      provider: { getMigrations: () => Promise.resolve(migrations) },
    });
    const { error, results } = await migrator.migrateToLatest();
    if (error)
      throw error instanceof Error ? error : new Error('migration failed', { cause: error });
    return { databaseCreated, applied: appliedNames(results) };
  } finally {
    await db.destroy();
  }
}

function appliedNames(results: MigrationResultSet['results']): string[] {
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
