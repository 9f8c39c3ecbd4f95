import { randomBytes } from 'node:crypto';
import type { Database, DbHandle, Environment } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { ShutdownState } from '@linkservice/lifecycle';
import { createLogger } from '@linkservice/logger';
import type { Tenant } from '@linkservice/testing';
import {
  createTenant,
  eventually,
  freePort,
  insertLink,
  testDatabase,
  testEnvironment,
} from '@linkservice/testing';
import type { Kysely } from 'kysely';
import { loadConfig } from './config';
import { buildDeps } from './deps';
import { InstallRetentionRepository } from './install-retention.repository';
import { startWorker } from './worker';

const DAY_MS = 24 * 3_600_000;

let postgres: DbHandle;
beforeAll(() => {
  postgres = testDatabase(8);
});
afterAll(async () => {
  await postgres.close();
});

/**
 * An install of `tenant`'s, created `ageDays` ago, matched to one of its links through a click
 * (an install_clicks row), as the gateway's install report stores it.
 */
async function insertMatchedInstall(
  db: Kysely<Database>,
  tenant: Tenant,
  ageDays: number,
  environment: Environment = 'live',
): Promise<string> {
  const link = await insertLink(db, { appId: tenant.appId, environment });
  const id = newId('ins');
  const createdAt = new Date(Date.now() - ageDays * DAY_MS);
  await db
    .insertInto('installs')
    .values({
      id,
      app_id: tenant.appId,
      environment,
      platform: 'android',
      secret_hash: randomBytes(32),
      match_method: 'play_referrer',
      link_id: link.id,
      created_at: createdAt,
    })
    .execute();
  await db
    .insertInto('install_clicks')
    .values({
      install_id: id,
      token_hash: randomBytes(32).toString('base64url'),
      link_id: link.id,
      clicked_at: new Date(createdAt.getTime() - 60_000),
    })
    .execute();
  return id;
}

/** A creation_requests row of `tenant`'s, created `ageHours` ago. */
async function insertCreationRequest(tenant: Tenant, ageHours: number): Promise<string> {
  const id = `crt_${randomBytes(8).toString('hex')}`;
  await postgres.db
    .insertInto('creation_requests')
    .values({
      id,
      app_id: tenant.appId,
      status: 'done',
      results: JSON.stringify({ results: [] }),
      created_at: new Date(Date.now() - ageHours * 3_600_000),
    })
    .execute();
  return id;
}

async function creationRequestIds(ids: string[]): Promise<string[]> {
  const rows = await postgres.db
    .selectFrom('creation_requests')
    .select('id')
    .where('id', 'in', ids)
    .execute();
  return rows.map((row) => row.id);
}

/** Which of `ids` still have their installs row and their install_clicks row. */
async function remaining(
  ids: string[],
  db: Kysely<Database> = postgres.db,
): Promise<{ installs: string[]; clicks: string[] }> {
  const [installs, clicks] = await Promise.all([
    db.selectFrom('installs').select('id').where('id', 'in', ids).execute(),
    db.selectFrom('install_clicks').select('install_id').where('install_id', 'in', ids).execute(),
  ]);
  return {
    installs: installs.map((row) => row.id).sort(),
    clicks: clicks.map((row) => row.install_id).sort(),
  };
}

describe("the worker's retention", () => {
  it('deletes old installs with their clicks, the oldest first, and keeps recent ones', async () => {
    const [app, other] = await Promise.all([createTenant(postgres.db), createTenant(postgres.db)]);
    // In a transaction rolled back at the end: the worker processes of e2e tests, which run the
    // retention on the same database, never see (and delete) these rows, so the slice is exact.
    const trx = await postgres.db.startTransaction().execute();
    try {
      const oldest = await insertMatchedInstall(trx, app, 3_000);
      const older = await insertMatchedInstall(trx, app, 2_000, 'test');
      const old = await insertMatchedInstall(trx, app, 91);
      const recent = await insertMatchedInstall(trx, app, 89);
      const othersRecent = await insertMatchedInstall(trx, other, 1);
      const all = [oldest, older, old, recent, othersRecent];
      const repository = new InstallRetentionRepository(trx);

      // A bounded slice takes the oldest rows first (the created_at index's order).
      expect(await repository.deleteOlderThan(90, 2)).toBe(2);
      expect((await remaining(all, trx)).installs).toEqual([old, recent, othersRecent].sort());

      expect(await repository.deleteOlderThan(90, 100)).toBeGreaterThanOrEqual(1);
      // The cascade took each deleted install's click; the rest, other apps' too, are untouched.
      expect(await remaining(all, trx)).toEqual({
        installs: [recent, othersRecent].sort(),
        clicks: [recent, othersRecent].sort(),
      });
      // The links the installs had matched stay: only the installation's own records go.
      const links = await trx
        .selectFrom('links')
        .select('id')
        .where('app_id', '=', app.appId)
        .execute();
      expect(links).toHaveLength(4);
    } finally {
      await trx.rollback().execute();
    }
  });

  it('runs in the worker with the configured INSTALL_RETENTION_DAYS, beside the creation requests', async () => {
    const app = await createTenant(postgres.db);
    // Kept by the default 90 days: only the configured 30 deletes it.
    const pastRetention = await insertMatchedInstall(postgres.db, app, 31);
    const withinRetention = await insertMatchedInstall(postgres.db, app, 29);
    // CREATION_REQUESTS_RETENTION_HOURS: 25 (not the default 24, which any other worker runs).
    const [oldRequest, freshRequest] = await Promise.all([
      insertCreationRequest(app, 26),
      insertCreationRequest(app, 24.5),
    ]);

    const env = testEnvironment();
    const config = loadConfig({
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: env.databaseUrl,
      REDIS_URL: env.redisUrl,
      // Its own queue namespace: this worker must not take other tests' creation jobs.
      REDIS_PREFIX: `${env.redisPrefix}-retention`,
      WORKER_HEALTH_PORT: String(await freePort()),
      INSTALL_RETENTION_DAYS: '30',
      CREATION_REQUESTS_RETENTION_HOURS: '25',
    });
    const logger = createLogger('worker-test', 'silent');
    const shutdown = new ShutdownState();
    const resources = buildDeps(config, logger, { shutdown });
    const started = await startWorker(resources.deps, { config, logger, shutdown });
    try {
      await eventually(
        async () => ((await remaining([pastRetention])).installs.length === 0 ? true : undefined),
        { what: 'the install past INSTALL_RETENTION_DAYS deleted' },
      );
      await eventually(
        async () => ((await creationRequestIds([oldRequest])).length === 0 ? true : undefined),
        {
          what: 'the creation request past CREATION_REQUESTS_RETENTION_HOURS deleted',
        },
      );
    } finally {
      shutdown.begin();
      await started.stop(5_000);
      await resources.close();
    }
    expect(await creationRequestIds([oldRequest, freshRequest])).toEqual([freshRequest]);
    expect(await remaining([pastRetention, withinRetention])).toEqual({
      installs: [withinRetention],
      clicks: [withinRetention],
    });
  });
});
