import type { Kysely, RawBuilder } from 'kysely';
import { sql } from 'kysely';
import { ANALYTICS_DIMENSIONS } from '@linkservice/contracts';
import type { Database, Environment } from '@linkservice/db';

/**
 * Issue 27's consistency rule, checked in SQL against the rollup tables (not through an API):
 * for one app and environment,
 * - per link, its clicks (people and bots) agree across click_rollup_hours, click_rollup_days,
 *   link_click_days and link_click_months, bucket by bucket (hours summed per UTC day, days per
 *   month), and their sum is what its link_clicks.click_count gained;
 * - the app's own rows (link_id '') equal the sum of its links' rows, in every table and bucket,
 *   and so do its unique visitors per day (kept by a trigger);
 * - every breakdown sums to its total: per scope and dimension column, GROUP BY the column as an
 *   API's breakdown would, in both rollups; and click_dimension_days (the app's rows, and a link's
 *   days whose dimensions were derived) value by value against click_rollup_days.
 * Read in one REPEATABLE READ transaction: the flusher writes click_count and every rollup in
 * one statement, so one snapshot must agree even while it runs.
 */

export interface ClickFigures {
  people: number;
  bots: number;
}

/** One scope's (a link's, or the app's) clicks in each table, summed over every bucket. */
export interface ScopeFigures {
  hours: ClickFigures;
  days: ClickFigures;
  linkDays: ClickFigures;
  months: ClickFigures;
  uniqueVisitors: number;
}

export interface LinkFigures extends ScopeFigures {
  linkId: string;
  /** link_clicks.click_count now (0 without a row). */
  clickCount: number;
  /** What it gained since the baseline: the analytics' total must equal it. */
  gained: number;
}

export interface AnalyticsConsistency {
  links: LinkFigures[];
  /** The app's own rows ('' scope). */
  app: ScopeFigures;
  /** Sums over `links`: clickCount gained, and the analytics' clicks + bot clicks (daily rollup). */
  clickCountGained: number;
  analyticsTotal: number;
  /** How many per-dimension breakdowns were summed and compared with their totals. */
  breakdownsChecked: number;
  /** Every disagreement, one line each; empty when consistent. */
  problems: string[];
}

export interface ConsistencyOptions {
  appId: string;
  environment?: Environment;
  /** The links to report (every link of the app and environment by default). */
  linkIds?: readonly string[];
  /** click_count of links that had clicks before the measured range; 0 for the others. */
  baseline?: ReadonlyMap<string, number>;
}

type Scoped = Map<string, ClickFigures>;

const ZERO: ClickFigures = { people: 0, bots: 0 };

function add(map: Scoped, key: string, people: number, bots: number): void {
  const was = map.get(key) ?? ZERO;
  map.set(key, { people: was.people + people, bots: was.bots + bots });
}

function same(a: ClickFigures | undefined, b: ClickFigures | undefined): boolean {
  return (a ?? ZERO).people === (b ?? ZERO).people && (a ?? ZERO).bots === (b ?? ZERO).bots;
}

function show(figures: ClickFigures | undefined): string {
  const { people, bots } = figures ?? ZERO;
  return `${people}+${bots} bots`;
}

/** `<scope>|<bucket>` keys of two maps that disagree. */
function compare(what: string, left: Scoped, right: Scoped, problems: string[]): void {
  for (const key of new Set([...left.keys(), ...right.keys()])) {
    if (!same(left.get(key), right.get(key))) {
      problems.push(`${what} at ${key}: ${show(left.get(key))} vs ${show(right.get(key))}`);
    }
  }
}

/** Per `scope|bucket` of one table; `bucket` is an SQL expression giving 'YYYY-MM-DD' text. */
async function grouped(
  db: Kysely<Database>,
  table: string,
  bucket: RawBuilder<unknown>,
  appId: string,
  environment: string,
): Promise<Scoped> {
  const rows = await sql<{ link_id: string; bucket: string; people: string; bots: string }>`
    SELECT link_id, ${bucket} AS bucket, sum(clicks) AS people, sum(bot_clicks) AS bots
    FROM ${sql.table(table)}
    WHERE app_id = ${appId} AND environment = ${environment}
    GROUP BY 1, 2`.execute(db);
  const map: Scoped = new Map();
  for (const row of rows.rows) {
    add(map, `${row.link_id}|${row.bucket}`, Number(row.people), Number(row.bots));
  }
  return map;
}

/** Folds `scope|bucket` keys: `into` gives the new key (e.g. the app's, or the month's). */
function fold(map: Scoped, into: (scope: string, bucket: string) => string | null): Scoped {
  const folded: Scoped = new Map();
  for (const [key, figures] of map) {
    const [scope, bucket] = key.split('|');
    const target = into(scope, bucket);
    if (target !== null) add(folded, target, figures.people, figures.bots);
  }
  return folded;
}

/** Per scope, over all its buckets. */
function perScope(map: Scoped): Scoped {
  return fold(map, (scope) => scope);
}

export async function checkAnalyticsConsistency(
  db: Kysely<Database>,
  options: ConsistencyOptions,
): Promise<AnalyticsConsistency> {
  const { appId, environment = 'live' } = options;
  return db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (trx) => {
      const problems: string[] = [];
      const day = sql.raw(`to_char(day, 'YYYY-MM-DD')`);
      const hours = await grouped(
        trx,
        'click_rollup_hours',
        sql.raw(`to_char(hour AT TIME ZONE 'UTC', 'YYYY-MM-DD')`),
        appId,
        environment,
      );
      const days = await grouped(trx, 'click_rollup_days', day, appId, environment);
      const linkDays = await grouped(trx, 'link_click_days', day, appId, environment);
      const months = await grouped(
        trx,
        'link_click_months',
        sql.raw(`to_char(month, 'YYYY-MM')`),
        appId,
        environment,
      );
      // link_click_days rows that hold only unique visitors are no clicks.
      for (const [key, figures] of linkDays) {
        if (figures.people + figures.bots === 0) linkDays.delete(key);
      }

      // 1. One scope's clicks agree across the tables, bucket by bucket.
      compare('hours (per UTC day) vs days', hours, days, problems);
      compare('link_click_days vs click_rollup_days', linkDays, days, problems);
      compare(
        'link_click_months vs click_rollup_days (per month)',
        months,
        fold(days, (scope, bucket) => `${scope}|${bucket.slice(0, 7)}`),
        problems,
      );

      // 2. The app's rows are the sum of its links' rows, in every table.
      for (const [name, map] of [
        ['click_rollup_hours', hours],
        ['click_rollup_days', days],
        ['link_click_days', linkDays],
        ['link_click_months', months],
      ] as const) {
        compare(
          `${name}: app row vs sum of its links`,
          fold(map, (scope, bucket) => (scope === '' ? bucket : null)),
          fold(map, (scope, bucket) => (scope === '' ? null : bucket)),
          problems,
        );
      }
      const visitors = await sql<{ link_id: string; day: string; unique_visitors: string }>`
        SELECT link_id, to_char(day, 'YYYY-MM-DD') AS day, unique_visitors
        FROM link_click_days WHERE app_id = ${appId} AND environment = ${environment}`.execute(trx);
      const visitorsOf = new Map<string, number>();
      const appVisitors = new Map<string, number>();
      const linksVisitors = new Map<string, number>();
      for (const row of visitors.rows) {
        const count = Number(row.unique_visitors);
        visitorsOf.set(row.link_id, (visitorsOf.get(row.link_id) ?? 0) + count);
        const target = row.link_id === '' ? appVisitors : linksVisitors;
        target.set(row.day, (target.get(row.day) ?? 0) + count);
      }
      for (const dayText of new Set([...appVisitors.keys(), ...linksVisitors.keys()])) {
        if ((appVisitors.get(dayText) ?? 0) !== (linksVisitors.get(dayText) ?? 0)) {
          problems.push(
            `unique visitors on ${dayText}: app ${appVisitors.get(dayText) ?? 0} vs links ${linksVisitors.get(dayText) ?? 0}`,
          );
        }
      }

      // 3. Every breakdown sums to its total, as an API's GROUP BY <dimension> reads it.
      let breakdownsChecked = 0;
      for (const [table, totals] of [
        ['click_rollup_hours', perScope(hours)],
        ['click_rollup_days', perScope(days)],
      ] as const) {
        for (const { column } of ANALYTICS_DIMENSIONS) {
          const rows = await sql<{ link_id: string; people: string; bots: string }>`
            SELECT link_id, ${sql.ref(column)} AS value, sum(clicks) AS people,
              sum(bot_clicks) AS bots
            FROM ${sql.table(table)}
            WHERE app_id = ${appId} AND environment = ${environment}
            GROUP BY link_id, ${sql.ref(column)}`.execute(trx);
          const summed: Scoped = new Map();
          for (const row of rows.rows)
            add(summed, row.link_id, Number(row.people), Number(row.bots));
          compare(`${table} by ${column} vs total`, summed, totals, problems);
          breakdownsChecked += totals.size;
        }
      }
      // click_dimension_days, value by value, against click_rollup_days grouped by the column:
      // the app's rows always, a link's on the days its link_click_days row marks derived (the
      // others are read from click_rollup_days, so nobody reads them).
      const derived = await sql<{ link_id: string; day: string }>`
        SELECT link_id, to_char(day, 'YYYY-MM-DD') AS day FROM link_click_days
        WHERE app_id = ${appId} AND environment = ${environment} AND dimensions_derived`.execute(
        trx,
      );
      const derivedDays = new Set(derived.rows.map((row) => `${row.link_id}|${row.day}`));
      const read = (scope: string, dayText: string) =>
        scope === '' || derivedDays.has(`${scope}|${dayText}`);
      const dimensionRows = await sql<{
        link_id: string;
        day: string;
        dimension: string;
        value: string;
        people: string;
        bots: string;
      }>`
        SELECT link_id, to_char(day, 'YYYY-MM-DD') AS day, dimension, value,
          clicks AS people, bot_clicks AS bots
        FROM click_dimension_days
        WHERE app_id = ${appId} AND environment = ${environment}`.execute(trx);
      const stored = new Map<string, Scoped>(
        ANALYTICS_DIMENSIONS.map(({ column }) => [column, new Map()]),
      );
      for (const row of dimensionRows.rows) {
        const map = stored.get(row.dimension);
        if (map === undefined) {
          problems.push(`click_dimension_days holds an unknown dimension ${row.dimension}`);
        } else if (read(row.link_id, row.day)) {
          add(map, `${row.link_id}|${row.day}|${row.value}`, Number(row.people), Number(row.bots));
        }
      }
      for (const [column, map] of stored) {
        const rows = await sql<{
          link_id: string;
          day: string;
          value: string;
          people: string;
          bots: string;
        }>`
          SELECT link_id, to_char(day, 'YYYY-MM-DD') AS day, ${sql.ref(column)} AS value,
            sum(clicks) AS people, sum(bot_clicks) AS bots
          FROM click_rollup_days
          WHERE app_id = ${appId} AND environment = ${environment}
          GROUP BY 1, 2, 3`.execute(trx);
        const expected: Scoped = new Map();
        for (const row of rows.rows) {
          if (read(row.link_id, row.day)) {
            add(
              expected,
              `${row.link_id}|${row.day}|${row.value}`,
              Number(row.people),
              Number(row.bots),
            );
          }
        }
        compare(`click_dimension_days ${column} vs click_rollup_days`, map, expected, problems);
        breakdownsChecked += new Set(
          [...expected.keys()].map((key) => key.slice(0, key.lastIndexOf('|'))),
        ).size;
      }

      // 4. Per link: its total is what click_count gained.
      const linkIds =
        options.linkIds ??
        (
          await trx
            .selectFrom('links')
            .select('id')
            .where('app_id', '=', appId)
            .where('environment', '=', environment)
            .execute()
        ).map((row) => row.id);
      const counts = new Map(
        linkIds.length === 0
          ? []
          : (
              await trx
                .selectFrom('link_clicks')
                .select(['link_id', 'click_count'])
                .where('link_id', 'in', linkIds)
                .execute()
            ).map((row) => [row.link_id, Number(row.click_count)]),
      );
      const scopeFigures = (scope: string): ScopeFigures => ({
        hours: perScope(hours).get(scope) ?? ZERO,
        days: perScope(days).get(scope) ?? ZERO,
        linkDays: perScope(linkDays).get(scope) ?? ZERO,
        months: perScope(months).get(scope) ?? ZERO,
        uniqueVisitors: visitorsOf.get(scope) ?? 0,
      });
      const links = linkIds.map((linkId): LinkFigures => {
        const clickCount = counts.get(linkId) ?? 0;
        const gained = clickCount - (options.baseline?.get(linkId) ?? 0);
        const figures = scopeFigures(linkId);
        for (const [table, value] of Object.entries(figures)) {
          if (table === 'uniqueVisitors') continue;
          const { people, bots } = value as ClickFigures;
          if (people + bots !== gained) {
            problems.push(
              `link ${linkId}: ${table} hold ${people}+${bots} bots, clickCount gained ${gained}`,
            );
          }
        }
        return { linkId, clickCount, gained, ...figures };
      });
      const app = scopeFigures('');
      return {
        links,
        app,
        clickCountGained: links.reduce((sum, link) => sum + link.gained, 0),
        analyticsTotal: links.reduce((sum, link) => sum + link.days.people + link.days.bots, 0),
        breakdownsChecked,
        problems,
      };
    });
}

/** One line for a tier's report: clickCount gained vs analytics, and what was checked. */
export function consistencySummary(result: AnalyticsConsistency): string {
  const clicked = result.links.filter((link) => link.gained > 0).length;
  return (
    `analytics ${result.analyticsTotal} (${result.app.days.people} people, ${result.app.days.bots} bots; app row ` +
    `${result.app.days.people + result.app.days.bots}) for clickCount +${result.clickCountGained} over ` +
    `${clicked} links; ${result.breakdownsChecked} breakdowns summed; ` +
    (result.problems.length === 0
      ? 'consistent'
      : `${result.problems.length} INCONSISTENT: ${result.problems.slice(0, 3).join('; ')}`)
  );
}
