import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { ensureDatabase } from '../migrate';
import { migrations } from '../migrations';
import { createDb } from '../pool';
import type { DbHandle } from '../pool';

/** A migration's schemas are not the app's Database type: tests read them untyped. */
export type Untyped = Kysely<Record<string, Record<string, unknown>>>;

export interface MigrationDatabase {
  readonly db: Untyped;
  /** Migrates up or down to the named migration; throws its error. */
  migrateTo(target: string): Promise<void>;
}

/**
 * A database of the calling test file's own (created in beforeAll, dropped in afterAll), for
 * tests that migrate down and up, which the run's shared database must not see. libs/testing
 * depends on this package, so it starts from the per-run database its global setup exported.
 */
export function useMigrationDatabase(): MigrationDatabase {
  let url: string | undefined;
  let handle: DbHandle | undefined;
  let migrator: Migrator | undefined;

  beforeAll(async () => {
    const server = new URL(process.env.DATABASE_URL ?? '');
    server.pathname = `${server.pathname}_mig_${randomBytes(3).toString('hex')}`;
    url = server.toString();
    await ensureDatabase(url);
    handle = createDb({ connectionString: url, max: 2 });
    migrator = new Migrator({
      db: handle.db,
      provider: { getMigrations: () => Promise.resolve(migrations) },
    });
  });

  afterAll(async () => {
    await handle?.close();
    if (url === undefined) return;
    const admin = new URL(url);
    const name = decodeURIComponent(admin.pathname.replace(/^\//, ''));
    admin.pathname = '/postgres';
    const client = new pg.Client({ connectionString: admin.toString() });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)}`);
    } finally {
      await client.end();
    }
  });

  return {
    get db() {
      if (!handle) throw new Error('the migration database opens in beforeAll');
      return handle.db as unknown as Untyped;
    },
    async migrateTo(target) {
      if (!migrator) throw new Error('the migration database opens in beforeAll');
      const { error } = await migrator.migrateTo(target);
      if (error) {
        throw error instanceof Error ? error : new Error('migration failed', { cause: error });
      }
    },
  };
}
