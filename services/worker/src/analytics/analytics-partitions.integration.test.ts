import { randomBytes } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { createDb, migrateToLatest } from '@linkservice/db';
import { eventually, testEnvironment } from '@linkservice/testing';
import { sql } from 'kysely';
import pg from 'pg';
import type { AnalyticsRetention, PartitionedTable } from './analytics-months';
import { PARTITIONED_TABLES } from './analytics-months';
import { AnalyticsPartitionsRepository } from './analytics-partitions.repository';

/**
 * A database of this file's own: these tests create, fill and drop the partitions of whole
 * months (of years to come, with a `now` of their own), which the run's shared database, where
 * other tests and workers read and write the same tables, must not see.
 */
let url: string;
let postgres: DbHandle;
let other: DbHandle;
beforeAll(async () => {
  const server = new URL(testEnvironment().databaseUrl);
  server.pathname = `${server.pathname}_parts_${randomBytes(3).toString('hex')}`;
  url = server.toString();
  await migrateToLatest(url);
  postgres = createDb({ connectionString: url, max: 4 });
  other = createDb({ connectionString: url, max: 4 });
});
afterAll(async () => {
  await Promise.all([postgres.close(), other.close()]);
  const admin = new URL(url);
  const name = decodeURIComponent(admin.pathname.slice(1));
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
});

const RETENTION: AnalyticsRetention = { hourlyDays: 90, dailyDays: 800 };
const DIMENSIONS = {
  country: 'DE',
  platform: 'ios',
  os: 'ios',
  browser: 'safari',
  referrer: 'direct',
  utm_source: 'none',
  utm_medium: 'none',
  utm_campaign: 'none',
};

const newAppId = () => `app_${randomBytes(6).toString('hex')}`;

async function partitions(table: PartitionedTable): Promise<string[]> {
  const result = await sql<{ name: string }>`
    SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = ${table}::regclass ORDER BY 1`.execute(postgres.db);
  return result.rows.map((row) => row.name);
}

/** A link's day as the flusher writes it (the trigger raises the app's row by the visitors). */
async function linkDay(
  appId: string,
  linkId: string,
  day: string,
  clicks: number,
  visitors: number,
  db = postgres.db,
): Promise<void> {
  await sql`
    INSERT INTO link_click_days (app_id, environment, link_id, day, clicks, unique_visitors)
    VALUES (${appId}, 'live', ${linkId}, ${day}, ${clicks}, ${visitors})
    ON CONFLICT (app_id, environment, link_id, day) DO UPDATE
    SET clicks = link_click_days.clicks + EXCLUDED.clicks,
      unique_visitors = link_click_days.unique_visitors + EXCLUDED.unique_visitors`.execute(db);
}

async function hourRow(appId: string, hour: string, clicks = 1): Promise<void> {
  await postgres.db
    .insertInto('click_rollup_hours')
    .values({ app_id: appId, environment: 'live', link_id: '', hour, ...DIMENSIONS, clicks })
    .execute();
}

async function dayRows(appId: string, day: string, clicks = 1): Promise<void> {
  await postgres.db
    .insertInto('click_rollup_days')
    .values({ app_id: appId, environment: 'live', link_id: '', day, ...DIMENSIONS, clicks })
    .execute();
  await postgres.db
    .insertInto('click_dimension_days')
    .values({
      app_id: appId,
      environment: 'live',
      link_id: '',
      day,
      dimension: 'country',
      value: 'DE',
      clicks,
    })
    .execute();
}

/** Every row of the app in the table, with the partition holding it. */
async function rowsOf(table: string, appId: string) {
  const result = await sql<Record<string, unknown> & { partition: string }>`
    SELECT t.tableoid::regclass::text AS partition, t.* FROM ${sql.table(table)} t
    WHERE app_id = ${appId} ORDER BY 3, 4, 5`.execute(postgres.db);
  return result.rows;
}

const withoutPartition = (rows: { partition: string }[]) =>
  rows.map(({ partition: _, ...row }) => row);

/** Whether the table has column statistics (ANALYZE wrote them: pg_statistic is transactional). */
async function analyzed(table: string): Promise<boolean> {
  const result = await sql<{ count: number }>`
    SELECT count(*)::int AS count FROM pg_stats
    WHERE schemaname = 'public' AND tablename = ${table}`.execute(postgres.db);
  return result.rows[0].count > 0;
}

async function appVisitors(appId: string): Promise<number> {
  const result = await sql<{ sum: number }>`
    SELECT coalesce(sum(unique_visitors), 0)::int AS sum FROM link_click_days
    WHERE app_id = ${appId} AND link_id = ''`.execute(postgres.db);
  return result.rows[0].sum;
}

describe('AnalyticsPartitionsRepository.ensureMonths', () => {
  it('creates the previous month through three ahead (UTC months), once', async () => {
    // Created by a session in New York: the bounds are UTC all the same.
    const newYork = createDb({
      connectionString: `${url}?options=${encodeURIComponent('-c TimeZone=America/New_York')}`,
      max: 1,
    });
    const zone = await sql<{ zone: string }>`SELECT current_setting('TimeZone') AS zone`.execute(
      newYork.db,
    );
    expect(zone.rows[0].zone).toBe('America/New_York');
    const repository = new AnalyticsPartitionsRepository(newYork.db, RETENTION);
    const created = await repository
      .ensureMonths(new Date('2031-01-15T10:00:00Z'))
      .finally(() => newYork.close());
    expect(created).toEqual({ created: 20, moved: 0, busy: 0 });
    for (const table of PARTITIONED_TABLES) {
      expect((await partitions(table)).filter((name) => !/_y20(29|3[2-9])m/.test(name))).toEqual([
        `${table}_default`,
        `${table}_y2030m12`,
        `${table}_y2031m01`,
        `${table}_y2031m02`,
        `${table}_y2031m03`,
        `${table}_y2031m04`,
      ]);
    }
    const again = new AnalyticsPartitionsRepository(postgres.db, RETENTION);
    expect(await again.ensureMonths(new Date('2031-01-31T23:00:00Z'))).toEqual({
      created: 0,
      moved: 0,
      busy: 0,
    });

    // The bounds are UTC midnights of the 1st, whatever the session's time zone.
    const appId = newAppId();
    await hourRow(appId, '2031-01-31T23:00:00Z');
    await hourRow(appId, '2031-02-01T00:00:00Z');
    await dayRows(appId, '2031-02-28');
    expect((await rowsOf('click_rollup_hours', appId)).map((row) => row.partition)).toEqual([
      'click_rollup_hours_y2031m01',
      'click_rollup_hours_y2031m02',
    ]);
    expect((await rowsOf('click_rollup_days', appId))[0].partition).toBe(
      'click_rollup_days_y2031m02',
    );

    // A new partition is the parent's: its primary key, its collation, its triggers.
    const part = await sql<{ pkey: boolean; collation: string; triggers: number }>`
      SELECT
        EXISTS (SELECT 1 FROM pg_index WHERE indrelid = 'link_click_days_y2031m02'::regclass
          AND indisprimary) AS pkey,
        (SELECT collname FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
          WHERE attrelid = 'link_click_days_y2031m02'::regclass AND attname = 'link_id')
          AS collation,
        (SELECT count(*)::int FROM pg_trigger
          WHERE tgrelid = 'link_click_days_y2031m02'::regclass) AS triggers`.execute(postgres.db);
    expect(part.rows[0]).toEqual({ pkey: true, collation: 'C', triggers: 2 });
  });

  it("moves a new month's rows out of the DEFAULT partition without changing the app's unique visitors", async () => {
    const appId = newAppId();
    // Rows written before their months existed: in the DEFAULT partitions. The app's row of
    // each day was raised by the trigger as the links' rows were written.
    await linkDay(appId, 'lnk_a', '2032-03-31', 5, 3);
    await linkDay(appId, 'lnk_b', '2032-03-31', 2, 2);
    await linkDay(appId, 'lnk_a', '2032-04-01', 4, 4);
    await linkDay(appId, 'lnk_a', '2032-09-01', 1, 1); // past 3 months ahead: stays
    await hourRow(appId, '2032-03-31T23:00:00Z');
    await hourRow(appId, '2032-04-01T00:00:00Z');
    await dayRows(appId, '2032-04-15');
    const visitorsBefore = await appVisitors(appId);
    expect(visitorsBefore).toBe(3 + 2 + 4 + 1);
    const before = withoutPartition(await rowsOf('link_click_days', appId));
    expect(new Set((await rowsOf('link_click_days', appId)).map((row) => row.partition))).toEqual(
      new Set(['link_click_days_default']),
    );

    const repository = new AnalyticsPartitionsRepository(postgres.db, RETENTION);
    const result = await repository.ensureMonths(new Date('2032-04-10T00:00:00Z'));
    // link_click_days: 3 link rows and 2 app rows (September's 2 stay); 2 hours; 1 rollup day;
    // 1 dimension day.
    expect(result).toEqual({ created: 20, moved: 5 + 2 + 1 + 1, busy: 0 });

    expect(await appVisitors(appId)).toBe(visitorsBefore);
    expect(withoutPartition(await rowsOf('link_click_days', appId))).toEqual(before);
    expect(
      (await rowsOf('link_click_days', appId)).map((row) => [row.link_id, row.day, row.partition]),
    ).toEqual([
      ['', '2032-03-31', 'link_click_days_y2032m03'],
      ['', '2032-04-01', 'link_click_days_y2032m04'],
      ['', '2032-09-01', 'link_click_days_default'],
      ['lnk_a', '2032-03-31', 'link_click_days_y2032m03'],
      ['lnk_a', '2032-04-01', 'link_click_days_y2032m04'],
      ['lnk_a', '2032-09-01', 'link_click_days_default'],
      ['lnk_b', '2032-03-31', 'link_click_days_y2032m03'],
    ]);
    expect((await rowsOf('click_rollup_hours', appId)).map((row) => row.partition)).toEqual([
      'click_rollup_hours_y2032m03',
      'click_rollup_hours_y2032m04',
    ]);
    expect((await rowsOf('click_dimension_days', appId))[0].partition).toBe(
      'click_dimension_days_y2032m04',
    );
    // The months filled by the move and the DEFAULT left with rows (September's) were analyzed;
    // a month created empty was not (the flusher's rows reach autovacuum as they come).
    expect(await analyzed('link_click_days_y2032m03')).toBe(true);
    expect(await analyzed('click_rollup_hours_y2032m03')).toBe(true);
    expect(await analyzed('click_dimension_days_y2032m04')).toBe(true);
    expect(await analyzed('link_click_days_default')).toBe(true);
    expect(await analyzed('link_click_days_y2032m05')).toBe(false);

    // The moved rows take part in the trigger again: a link's later visitors raise the app's.
    await linkDay(appId, 'lnk_b', '2032-03-31', 1, 5);
    expect(await appVisitors(appId)).toBe(visitorsBefore + 5);
  });

  it('lets two workers ensure the same months at once: each month made once, nothing lost', async () => {
    const appId = newAppId();
    for (let i = 0; i < 50; i++) await linkDay(appId, `lnk_${i}`, '2033-06-15', 1, 1);
    const visitorsBefore = await appVisitors(appId);
    const now = new Date('2033-06-20T00:00:00Z');
    const [a, b] = await Promise.all([
      new AnalyticsPartitionsRepository(postgres.db, RETENTION).ensureMonths(now),
      new AnalyticsPartitionsRepository(other.db, RETENTION).ensureMonths(now),
    ]);
    expect(a.created + b.created).toBe(20);
    for (const table of PARTITIONED_TABLES) {
      expect((await partitions(table)).filter((name) => name.includes('_y2033m'))).toHaveLength(5);
    }
    const rows = await rowsOf('link_click_days', appId);
    expect(rows).toHaveLength(51);
    expect(new Set(rows.map((row) => row.partition))).toEqual(
      new Set(['link_click_days_y2033m06']),
    );
    expect(await appVisitors(appId)).toBe(visitorsBefore);
  });

  it('loses no write of a concurrent flusher while months are created', async () => {
    const appId = newAppId();
    // Enough rows in the DEFAULT partition that the move takes a while.
    await sql`
      INSERT INTO link_click_days (app_id, environment, link_id, day, clicks, unique_visitors)
      SELECT ${appId}, 'live', 'lnk_seed_' || i, '2034-02-01'::date + (i % 50), 1, 1
      FROM generate_series(1, 20000) AS i`.execute(postgres.db);
    const days = ['2034-01-31', '2034-02-10', '2034-03-05', '2034-04-30', '2034-05-01'];
    const written = new Map<string, number>();
    let creating = true;
    let writesWhileCreating = 0;
    const writer = (async () => {
      for (let i = 0; creating || i < 200; i++) {
        const key = `${days[i % days.length]}|lnk_w${i % 7}`;
        const [day, linkId] = key.split('|');
        await linkDay(appId, linkId, day, 1, 1, other.db);
        written.set(key, (written.get(key) ?? 0) + 1);
        if (creating) writesWhileCreating += 1;
      }
    })();
    const repository = new AnalyticsPartitionsRepository(postgres.db, RETENTION);
    const result = await repository.ensureMonths(new Date('2034-02-15T00:00:00Z'));
    creating = false;
    await writer;
    expect(result.created).toBe(20);
    expect(writesWhileCreating).toBeGreaterThan(0);

    const rows = await sql<{ day: string; link_id: string; clicks: number; uv: number }>`
      SELECT day, link_id, clicks::int, unique_visitors::int AS uv FROM link_click_days
      WHERE app_id = ${appId} AND link_id LIKE 'lnk_w%'`.execute(postgres.db);
    expect(
      Object.fromEntries(rows.rows.map((row) => [`${row.day}|${row.link_id}`, row.clicks])),
    ).toEqual(Object.fromEntries(written));
    // Each day's app row is still exactly the sum of its links' visitors.
    const sums = await sql<{ day: string; app: number; links: number }>`
      SELECT day, sum(unique_visitors) FILTER (WHERE link_id = '')::int AS app,
        sum(unique_visitors) FILTER (WHERE link_id <> '')::int AS links
      FROM link_click_days WHERE app_id = ${appId} GROUP BY day`.execute(postgres.db);
    expect(sums.rows.length).toBeGreaterThan(0);
    for (const row of sums.rows) expect(row.app).toBe(row.links);
    const defaultRows = await sql<{ count: number }>`
      SELECT count(*)::int AS count FROM link_click_days_default WHERE app_id = ${appId}`.execute(
      postgres.db,
    );
    expect(defaultRows.rows[0].count).toBe(0);
  });
});

describe("AnalyticsPartitionsRepository's retention", () => {
  // The calendar of these tests, earlier than any other test's rows (a cutoff applies to every
  // row): months of 2029 (now: 2029-07-20 12:30 UTC), hours kept 30 days
  // (cutoff 2029-06-20T12:30Z), days 60 (cutoff 2029-05-21).
  const retention: AnalyticsRetention = { hourlyDays: 30, dailyDays: 60 };
  const now = new Date('2029-07-20T12:30:00Z');

  it('drops the months wholly past the cutoff and deletes the straddling month in slices', async () => {
    const appId = newAppId();
    const repository = new AnalyticsPartitionsRepository(postgres.db, retention);
    // Months as they were created over time: 2029-03 through 2029-10.
    for (const at of ['2029-04-02', '2029-07-01']) {
      await repository.ensureMonths(new Date(`${at}T00:00:00Z`));
    }
    expect(
      (await partitions('click_rollup_hours')).filter((name) => name.includes('_y2029m')),
    ).toEqual(
      [3, 4, 5, 6, 7, 8, 9, 10].map(
        (m) => `click_rollup_hours_y2029m${String(m).padStart(2, '0')}`,
      ),
    );
    await hourRow(appId, '2029-05-10T00:00:00Z'); // in a dropped month
    for (let i = 0; i < 5; i++) await hourRow(appId, `2029-06-20T0${i}:00:00Z`); // older
    await hourRow(appId, '2029-06-20T13:00:00Z'); // kept
    await sql`ALTER TABLE click_rollup_hours DETACH PARTITION click_rollup_hours_y2029m09`.execute(
      postgres.db,
    );
    await sql`DROP TABLE click_rollup_hours_y2029m09`.execute(postgres.db);
    await hourRow(appId, '2029-01-01T00:00:00Z'); // in the DEFAULT: no month of its own
    await hourRow(appId, '2029-09-01T00:00:00Z'); // in the DEFAULT, recent
    for (const day of ['2029-04-30', '2029-05-20', '2029-05-21']) {
      await linkDay(appId, 'lnk_a', day, 1, 1);
    }

    expect(await repository.dropExpiredMonths('click_rollup_hours', now)).toBe(3);
    expect(
      (await partitions('click_rollup_hours')).filter((name) => name.includes('_y2029m')),
    ).toEqual(['06', '07', '08', '10'].map((m) => `click_rollup_hours_y2029m${m}`));
    expect(await repository.dropExpiredMonths('link_click_days', now)).toBe(2);
    expect(
      (await partitions('link_click_days')).filter((name) => name.includes('_y2029m')),
    ).toEqual(['05', '06', '07', '08', '09', '10'].map((m) => `link_click_days_y2029m${m}`));
    expect(await repository.dropExpiredMonths('link_click_days', now)).toBe(0);

    // Slices of at most 2 rows, until one comes back short: 5 in June, 1 in the DEFAULT.
    const slices: number[] = [];
    for (;;) {
      const deleted = await repository.deleteExpiredSlice('click_rollup_hours', now, 2);
      slices.push(deleted);
      if (deleted < 2) break;
    }
    expect(slices).toEqual([2, 2, 2, 0]);
    expect((await rowsOf('click_rollup_hours', appId)).map((row) => row.hour)).toEqual([
      new Date('2029-06-20T13:00:00Z'),
      new Date('2029-09-01T00:00:00Z'),
    ]);
    expect(await repository.deleteExpiredSlice('link_click_days', now, 100)).toBeGreaterThanOrEqual(
      2,
    );
    expect((await rowsOf('link_click_days', appId)).map((row) => [row.link_id, row.day])).toEqual([
      ['', '2029-05-21'],
      ['lnk_a', '2029-05-21'],
    ]);
  });

  it('deletes monthly totals of months ended before the daily cutoff, and dimension values after two days', async () => {
    const appId = newAppId();
    const repository = new AnalyticsPartitionsRepository(postgres.db, retention);
    for (const month of ['2029-03-01', '2029-04-01', '2029-05-01']) {
      await sql`
        INSERT INTO link_click_months (app_id, environment, link_id, month, clicks)
        VALUES (${appId}, 'live', '', ${month}, 1)`.execute(postgres.db);
    }
    for (const day of ['2029-07-16', '2029-07-17', '2029-07-18', '2029-07-20']) {
      await sql`
        INSERT INTO click_dimension_values (app_id, environment, link_id, day, dimension, value)
        VALUES (${appId}, 'live', '', ${day}, 'referrer', 'example.com')`.execute(postgres.db);
    }
    expect(await repository.deleteExpiredSlice('link_click_months', now, 1)).toBe(1);
    expect(await repository.deleteExpiredSlice('link_click_months', now, 100)).toBeGreaterThan(0);
    expect(await repository.deleteExpiredSlice('link_click_months', now, 100)).toBe(0);
    // May 2029 ends after the cutoff (2029-05-21): kept.
    expect((await rowsOf('link_click_months', appId)).map((row) => row.month)).toEqual([
      '2029-05-01',
    ]);
    while ((await repository.deleteExpiredSlice('click_dimension_values', now, 100)) > 0);
    expect((await rowsOf('click_dimension_values', appId)).map((row) => row.day)).toEqual([
      '2029-07-18',
      '2029-07-20',
    ]);
  });
});

describe('two workers keeping the analytics tables at once', () => {
  // A calendar of its own, earlier than every other test's rows: months of 2028 (now: 2028-07-20
  // 12:30 UTC), hours kept 30 days (cutoff 2028-06-20T12:30Z), days 60 (cutoff 2028-05-21).
  const retention: AnalyticsRetention = { hourlyDays: 30, dailyDays: 60 };
  const now = new Date('2028-07-20T12:30:00Z');

  /** Backends waiting for a lock on the table or one of its partitions. */
  async function waitingOn(table: PartitionedTable): Promise<number> {
    const result = await sql<{ count: number }>`
      SELECT count(DISTINCT l.pid)::int AS count FROM pg_locks l
      JOIN pg_class c ON c.oid = l.relation
      WHERE NOT l.granted AND c.relname LIKE ${`${table}%`}`.execute(postgres.db);
    return result.rows[0].count;
  }

  /** The retention row's slices alone, until one comes back short; how many rows went. */
  async function slicesRun(
    repository: AnalyticsPartitionsRepository,
    table: PartitionedTable,
    limit: number,
  ): Promise<number> {
    let deleted = 0;
    for (;;) {
      const slice = await repository.deleteExpiredSlice(table, now, limit);
      deleted += slice;
      if (slice < limit) return deleted;
    }
  }

  it('deletes around a partition the other worker drops under its slice: no error, no row missed', async () => {
    const appId = newAppId();
    const a = new AnalyticsPartitionsRepository(postgres.db, retention);
    const b = new AnalyticsPartitionsRepository(other.db, retention);
    for (const at of ['2028-04-02', '2028-07-01'])
      await a.ensureMonths(new Date(`${at}T00:00:00Z`));
    await hourRow(appId, '2028-04-10T00:00:00Z');
    await hourRow(appId, '2028-05-10T00:00:00Z');
    for (let i = 0; i < 3; i++) await hourRow(appId, `2028-06-20T0${i}:00:00Z`); // past it
    await hourRow(appId, '2028-06-20T13:00:00Z'); // kept

    // A reader of April's partition holds up worker A's DETACH of it, so worker B lists the
    // months A drops among the partitions to delete from, and waits for A's locks.
    const blocker = await postgres.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT count(*) FROM click_rollup_hours_y2028m04');
      const dropping = a.dropExpiredMonths('click_rollup_hours', now);
      await eventually(async () => (await waitingOn('click_rollup_hours')) === 1, {
        what: "worker A's DETACH waiting for the reader",
      });
      // B's slices only: its drop would wait for A's partition lock (as it should) instead.
      const deleting = slicesRun(b, 'click_rollup_hours', 2);
      await eventually(async () => (await waitingOn('click_rollup_hours')) === 2, {
        what: "worker B's slice waiting for worker A's locks",
      });
      await blocker.query('COMMIT');
      const [dropped, run] = await Promise.all([dropping, deleting]);
      expect(dropped).toBe(3); // March, April, May
      expect(run).toBeGreaterThanOrEqual(3);
    } finally {
      blocker.release();
    }
    expect((await rowsOf('click_rollup_hours', appId)).map((row) => row.hour)).toEqual([
      new Date('2028-06-20T13:00:00Z'),
    ]);
  });
});
