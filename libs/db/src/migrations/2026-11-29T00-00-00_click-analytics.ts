import type { Kysely } from 'kysely';
import { sql } from 'kysely';

// Frozen: never edit a migration that has shipped; add a new dated file instead.

/**
 * Click analytics as rollups: counts only, nothing personal (no address, user agent, full
 * referrer, cookie or visitor hash is ever stored; unique visitors arrive as one number per link
 * and day, counted in Redis).
 *
 * Every table has a row per scope: `link_id` is a link's id, or '' for the app and environment
 * as a whole (all of its links), so an app's answers read its own rows instead of summing every
 * link's. Reads filter on app_id and environment first: the key of every table starts with them.
 *
 * - click_rollup_hours / click_rollup_days: clicks (people) and bot_clicks (crawlers that were
 *   redirected) per scope, hour or UTC day, and combination of the eight dimensions. Values of
 *   the capped dimensions (referrer, utm_*) beyond the day's cap are stored as 'other'
 *   (click_dimension_values), so a link's rows per hour are bounded by the combinations that
 *   occurred. Partitioned by month; hourly rows are kept ANALYTICS_HOURLY_RETENTION_DAYS, daily
 *   ones ANALYTICS_DAILY_RETENTION_DAYS (the worker drops and deletes in slices, and creates the
 *   months ahead; a DEFAULT partition takes rows of a month not created yet).
 * - click_dimension_days: per scope, day, dimension and value: clicks and bot_clicks. The same
 *   clicks as click_rollup_days, one dimension at a time: what a breakdown without filters reads
 *   (a busy link has thousands of combinations a day, but only as many rows here as it has
 *   values: at most 250 countries + 4 + 7 + 12 + 4 x (cap + 1)). The app's rows ('') are kept
 *   by the flusher with every click; a link's are derived by the worker from its
 *   click_rollup_days rows once the day is over, for days of at least 1,000 clicks (eight
 *   upserts per clicked link and flush would double the flush's work; a quieter day has fewer
 *   combinations than clicks, as cheap to read), and count only while its link_click_days row says
 *   `dimensions_derived` (the flusher clears it when it adds a late click to that day; the
 *   worker derives the day again). Other days of a link are read from click_rollup_days.
 *
 * Text columns are COLLATE "C": the keys are ids and short values compared for equality and
 * kept in a stable order; bytewise comparison makes the flusher's upserts and sorts cheaper.
 * - link_click_days: per scope and day the totals and the day's unique visitors (HyperLogLog
 *   count, only ever raised; an app's is the sum of its links', kept by a trigger). Rows moved
 *   between partitions must go in without firing it (into the table before it is attached).
 * - link_click_months: per scope and month the totals, for an app's top links over a range.
 * - click_dimension_values: the capped dimensions' values admitted per scope and day, so the cap
 *   holds across flushes; kept two days.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const dimensions = sql.raw(`
      country text COLLATE "C" NOT NULL,
      platform text COLLATE "C" NOT NULL,
      os text COLLATE "C" NOT NULL,
      browser text COLLATE "C" NOT NULL,
      referrer text COLLATE "C" NOT NULL,
      utm_source text COLLATE "C" NOT NULL,
      utm_medium text COLLATE "C" NOT NULL,
      utm_campaign text COLLATE "C" NOT NULL`);
  const dimensionKey = sql.raw(
    'country, platform, os, browser, referrer, utm_source, utm_medium, utm_campaign',
  );
  await sql`
    CREATE TABLE click_rollup_hours (
      app_id text COLLATE "C" NOT NULL,
      environment text COLLATE "C" NOT NULL,
      link_id text COLLATE "C" NOT NULL,
      hour timestamptz NOT NULL,
      ${dimensions},
      clicks bigint NOT NULL DEFAULT 0,
      bot_clicks bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (app_id, environment, link_id, hour, ${dimensionKey})
    ) PARTITION BY RANGE (hour)`.execute(db);
  await sql`CREATE TABLE click_rollup_hours_default PARTITION OF click_rollup_hours DEFAULT`.execute(
    db,
  );
  await sql`
    CREATE TABLE click_rollup_days (
      app_id text COLLATE "C" NOT NULL,
      environment text COLLATE "C" NOT NULL,
      link_id text COLLATE "C" NOT NULL,
      day date NOT NULL,
      ${dimensions},
      clicks bigint NOT NULL DEFAULT 0,
      bot_clicks bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (app_id, environment, link_id, day, ${dimensionKey})
    ) PARTITION BY RANGE (day)`.execute(db);
  await sql`CREATE TABLE click_rollup_days_default PARTITION OF click_rollup_days DEFAULT`.execute(
    db,
  );
  await sql`
    CREATE TABLE click_dimension_days (
      app_id text COLLATE "C" NOT NULL,
      environment text COLLATE "C" NOT NULL,
      link_id text COLLATE "C" NOT NULL,
      day date NOT NULL,
      dimension text COLLATE "C" NOT NULL,
      value text COLLATE "C" NOT NULL,
      clicks bigint NOT NULL DEFAULT 0,
      bot_clicks bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (app_id, environment, link_id, day, dimension, value)
    ) PARTITION BY RANGE (day)`.execute(db);
  await sql`CREATE TABLE click_dimension_days_default PARTITION OF click_dimension_days DEFAULT`.execute(
    db,
  );
  await sql`
    CREATE TABLE link_click_days (
      app_id text COLLATE "C" NOT NULL,
      environment text COLLATE "C" NOT NULL,
      link_id text COLLATE "C" NOT NULL,
      day date NOT NULL,
      clicks bigint NOT NULL DEFAULT 0,
      bot_clicks bigint NOT NULL DEFAULT 0,
      unique_visitors bigint NOT NULL DEFAULT 0,
      dimensions_derived boolean NOT NULL DEFAULT false,
      PRIMARY KEY (app_id, environment, link_id, day)
    ) PARTITION BY RANGE (day)`.execute(db);
  await sql`CREATE TABLE link_click_days_default PARTITION OF link_click_days DEFAULT`.execute(db);
  // The link-days the worker derives dimension rows for (LinkDimensionDaysRepository): finished,
  // busy ones (a quiet day's combinations are as few as its clicks: read as they are).
  await sql`
    CREATE INDEX link_click_days_derive_idx ON link_click_days (day)
    WHERE link_id <> '' AND NOT dimensions_derived AND clicks + bot_clicks >= 1000`.execute(db);
  // The app's row of a day adds what each of its links' unique visitors rose by, exactly: the
  // trigger sees the link row's previous figure under its lock, whoever raised it.
  await sql`
    CREATE FUNCTION link_click_days_app_visitors() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO link_click_days (app_id, environment, link_id, day, unique_visitors)
      VALUES (NEW.app_id, NEW.environment, '', NEW.day,
        NEW.unique_visitors - CASE WHEN TG_OP = 'UPDATE' THEN OLD.unique_visitors ELSE 0 END)
      ON CONFLICT (app_id, environment, link_id, day)
      DO UPDATE SET unique_visitors = link_click_days.unique_visitors + EXCLUDED.unique_visitors;
      RETURN NULL;
    END
    $$`.execute(db);
  await sql`
    CREATE TRIGGER link_click_days_app_visitors_insert AFTER INSERT ON link_click_days
    FOR EACH ROW WHEN (NEW.link_id <> '' AND NEW.unique_visitors > 0)
    EXECUTE FUNCTION link_click_days_app_visitors()`.execute(db);
  await sql`
    CREATE TRIGGER link_click_days_app_visitors_update AFTER UPDATE OF unique_visitors
    ON link_click_days
    FOR EACH ROW WHEN (NEW.link_id <> '' AND NEW.unique_visitors > OLD.unique_visitors)
    EXECUTE FUNCTION link_click_days_app_visitors()`.execute(db);
  await sql`
    CREATE TABLE link_click_months (
      app_id text COLLATE "C" NOT NULL,
      environment text COLLATE "C" NOT NULL,
      link_id text COLLATE "C" NOT NULL,
      month date NOT NULL,
      clicks bigint NOT NULL DEFAULT 0,
      bot_clicks bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (app_id, environment, link_id, month)
    )`.execute(db);
  await sql`
    CREATE INDEX link_click_months_top_idx
    ON link_click_months (app_id, environment, month, clicks DESC, link_id)`.execute(db);
  await sql`
    CREATE TABLE click_dimension_values (
      app_id text COLLATE "C" NOT NULL,
      environment text COLLATE "C" NOT NULL,
      link_id text COLLATE "C" NOT NULL,
      day date NOT NULL,
      dimension text COLLATE "C" NOT NULL,
      value text COLLATE "C" NOT NULL,
      PRIMARY KEY (app_id, environment, link_id, day, dimension, value)
    )`.execute(db);
  await sql`CREATE INDEX click_dimension_values_day_idx ON click_dimension_values (day)`.execute(
    db,
  );
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`DROP TABLE click_dimension_values`.execute(db);
  await sql`DROP TABLE link_click_months`.execute(db);
  await sql`DROP TABLE link_click_days`.execute(db);
  await sql`DROP TABLE click_dimension_days`.execute(db);
  await sql`DROP FUNCTION link_click_days_app_visitors()`.execute(db);
  await sql`DROP TABLE click_rollup_days`.execute(db);
  await sql`DROP TABLE click_rollup_hours`.execute(db);
}
