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
  ownDatabase,
  testEnvironment,
} from '@linkservice/testing';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { loadConfig } from './config';
import { buildDeps } from './deps';
import { InstallRetentionRepository } from './install-retention.repository';
import { startWorker } from './worker';

const DAY_MS = 24 * 3_600_000;

// A database of this file's own: its workers run with retention settings other than the
// defaults, and every other file's workers (defaults: creation requests kept 24 hours) would
// otherwise delete the rows that tell the configured settings apart.
let postgres: DbHandle & { url: string; drop(): Promise<void> };
beforeAll(async () => {
  postgres = await ownDatabase(8);
});
afterAll(async () => {
  await postgres.drop();
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
    // CREATION_REQUESTS_RETENTION_HOURS: 25, not the default 24: the 24.5-hour-old one tells them apart.
    const [oldRequest, freshRequest] = await Promise.all([
      insertCreationRequest(app, 26),
      insertCreationRequest(app, 24.5),
    ]);

    const env = testEnvironment();
    const config = loadConfig({
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: postgres.url,
      REDIS_URL: env.redisUrl,
      WEBHOOK_ENCRYPTION_KEY: process.env.WEBHOOK_ENCRYPTION_KEY,
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

  it('keeps the months ahead and cuts the analytics tables back to the configured retention', async () => {
    const appId = `app_${randomBytes(6).toString('hex')}`;
    const now = Date.now();
    const day = (ageDays: number) => new Date(now - ageDays * DAY_MS).toISOString().slice(0, 10);
    const hour = (ageDays: number) => new Date(now - ageDays * DAY_MS);
    const dimensions = {
      country: 'DE',
      platform: 'ios',
      os: 'ios',
      browser: 'safari',
      referrer: 'direct',
      utm_source: 'none',
      utm_medium: 'none',
      utm_campaign: 'none',
    };
    // Past the configured retention (80 / 700 days) but within the defaults (90 / 800) that
    // every other worker on this database keeps: only this worker deletes them.
    await postgres.db
      .insertInto('click_rollup_hours')
      .values([
        { app_id: appId, environment: 'live', link_id: '', hour: hour(85), ...dimensions },
        { app_id: appId, environment: 'live', link_id: '', hour: hour(75), ...dimensions },
      ])
      .execute();
    await postgres.db
      .insertInto('link_click_days')
      .values([
        { app_id: appId, environment: 'live', link_id: 'lnk_old', day: day(750), clicks: 1 },
        { app_id: appId, environment: 'live', link_id: 'lnk_old', day: day(650), clicks: 1 },
      ])
      .execute();

    const env = testEnvironment();
    const config = loadConfig({
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      DATABASE_URL: postgres.url,
      REDIS_URL: env.redisUrl,
      WEBHOOK_ENCRYPTION_KEY: process.env.WEBHOOK_ENCRYPTION_KEY,
      REDIS_PREFIX: `${env.redisPrefix}-analytics-retention`,
      WORKER_HEALTH_PORT: String(await freePort()),
      ANALYTICS_HOURLY_RETENTION_DAYS: '80',
      ANALYTICS_DAILY_RETENTION_DAYS: '700',
    });
    const logger = createLogger('worker-test', 'silent');
    const shutdown = new ShutdownState();
    const resources = buildDeps(config, logger, { shutdown });
    const started = await startWorker(resources.deps, { config, logger, shutdown });
    const month = (offset: number) => {
      const at = new Date(now);
      const first = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + offset, 1));
      return `y${first.getUTCFullYear()}m${String(first.getUTCMonth() + 1).padStart(2, '0')}`;
    };
    try {
      await eventually(
        async () => {
          const result = await sql<{ name: string }>`
            SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'link_click_days'::regclass`.execute(postgres.db);
          const names = result.rows.map((row) => row.name);
          return [-1, 0, 1, 2, 3].every((offset) =>
            names.includes(`link_click_days_${month(offset)}`),
          )
            ? true
            : undefined;
        },
        { what: 'the months ahead created at start' },
      );
      await eventually(
        async () => {
          const [hours, days] = await Promise.all([
            postgres.db
              .selectFrom('click_rollup_hours')
              .select('hour')
              .where('app_id', '=', appId)
              .execute(),
            postgres.db
              .selectFrom('link_click_days')
              .select('day')
              .where('app_id', '=', appId)
              .execute(),
          ]);
          return hours.length === 1 && days.length === 1 ? { hours, days } : undefined;
        },
        { what: 'the analytics rows past the configured retention deleted' },
      );
    } finally {
      shutdown.begin();
      await started.stop(5_000);
      await resources.close();
    }
    const kept = await postgres.db
      .selectFrom('link_click_days')
      .select('day')
      .where('app_id', '=', appId)
      .execute();
    expect(kept).toEqual([{ day: day(650) }]);
    const keptHours = await postgres.db
      .selectFrom('click_rollup_hours')
      .select('hour')
      .where('app_id', '=', appId)
      .execute();
    expect(keptHours).toEqual([{ hour: hour(75) }]);
  });
});
