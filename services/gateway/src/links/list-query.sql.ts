import type { Expression, ExpressionBuilder, RawBuilder, SqlBool } from 'kysely';
import { expressionBuilder, sql } from 'kysely';
import { LINK_COLUMNS } from '@linkservice/contracts';
import type { CountedLinkRow, Database, Environment, LinkRow } from '@linkservice/db';
import type { LinkSort, LinkStatusFilter } from './list-params';

/**
 * GET /links as one statement (two for a sort=clicks page that reaches the never-clicked links),
 * composed from the typed fragments below. LinksRepository.list runs it; the strategy is told at
 * listStatement.
 */

/** Whose links a query may see: always the app and environment of the authenticating key. */
export interface LinkScope {
  appId: string;
  environment: Environment;
}

export interface LinkFilters {
  /** Matched case-insensitively as a literal substring (no wildcards). */
  search: string | undefined;
  tag: string | undefined;
  status: LinkStatusFilter | undefined;
}

export interface LinkListQuery extends LinkFilters {
  sort: LinkSort;
  limit: number;
  offset: number;
}

/** A link's columns as a LEFT JOIN gives them: all null when no link matched. */
export type NullableLinkRow = { [K in keyof CountedLinkRow]: CountedLinkRow[K] | null };

/** A row of the list statement: the LEFT JOINed link columns are all null on an empty page. */
export type PageRow = NullableLinkRow & { total: number; db_now: Date };

/**
 * Up to this many matches, a list collects and sorts them rather than walking a sort index.
 * Sorting 10,000 keys takes milliseconds; above it, matches are dense enough in an app's links
 * that an index walk finds a page quickly.
 */
export const FEW_MATCHES = 10_000;

type LinksExpressions = ExpressionBuilder<Database, 'links'>;
type LinkColumn = keyof LinkRow;

/** Escapes LIKE's wildcards and its escape character, so the search text matches literally. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

/**
 * The link-status rule in SQL (its TypeScript copy is contracts' linkStatus, and
 * LINK_STATUS_CASES is run against both): archived when archived_at is set; else expired when
 * expires_at <= now; else active. Each condition is written as the partial indexes of the
 * link-status-indexes migration state it, so the planner uses them.
 */
export function linkStatusIs(
  eb: LinksExpressions,
  status: LinkStatusFilter,
  now: Expression<Date> = sql<Date>`now()`,
): Expression<SqlBool> {
  const notArchived = eb('links.archived_at', 'is', null);
  switch (status) {
    case 'archived':
      return eb('links.archived_at', 'is not', null);
    case 'expired':
      return eb.and([notArchived, eb('links.expires_at', '<=', now)]);
    case 'active':
      return eb.and([
        notArchived,
        eb.or([eb('links.expires_at', 'is', null), eb('links.expires_at', '>', now)]),
      ]);
  }
}

/**
 * search_text is lower(...) of the searchable fields (see the initial migration); lower() on
 * both sides keeps case folding identical. The pattern is a constant of the statement, so the
 * trigram index on search_text serves it.
 */
function searchMatches(eb: LinksExpressions, search: string): Expression<SqlBool> {
  return sql<SqlBool>`${eb.ref('links.search_text')} LIKE '%' || lower(${escapeLike(search)}) || '%' ESCAPE '\\'`;
}

/** @> with a one-element array is what the GIN index on tags answers. */
function hasTag(eb: LinksExpressions, tag: string): Expression<SqlBool> {
  return eb('links.tags', '@>', sql<string[]>`cast(${[tag]} as text[])`);
}

/**
 * How a filter is written: `indexed` as the trigram and tag indexes answer it, `scanned` as the
 * same test of each row that no index answers (strpos finds a literal substring, = ANY an
 * element), for the rows of an app read through its own index.
 */
export type FilterForm = 'indexed' | 'scanned';

/** The scope and every filter of a list, ANDed; all values are bound parameters. */
export function linkMatches(
  eb: LinksExpressions,
  scope: LinkScope,
  filters: LinkFilters,
  form: FilterForm = 'indexed',
): Expression<SqlBool> {
  const conditions: Expression<SqlBool>[] = [
    eb('links.app_id', '=', scope.appId),
    eb('links.environment', '=', scope.environment),
  ];
  const { search, tag, status } = filters;
  if (search !== undefined) {
    conditions.push(
      form === 'indexed'
        ? searchMatches(eb, search)
        : sql<SqlBool>`strpos(${eb.ref('links.search_text')}, lower(${search})) > 0`,
    );
  }
  if (tag !== undefined) {
    conditions.push(
      form === 'indexed' ? hasTag(eb, tag) : sql<SqlBool>`${tag} = ANY(${eb.ref('links.tags')})`,
    );
  }
  if (status !== undefined) conditions.push(linkStatusIs(eb, status));
  return eb.and(conditions);
}

type OrderKey<C extends string> = readonly [column: C, direction: 'asc' | 'desc'];

/**
 * Each sort's order, as list-params.ts names the sorts. Each matches an index (oldest walks
 * links_newest_idx backwards; clicks walks link_clicks_order_idx, then links_app_id_order_idx,
 * see clicksWalk); ties break by id so pages never overlap. alias is unique per app and
 * environment and COLLATE "C" (code-point order), so it has no ties. click_count is the count
 * joined from link_clicks; every other key is a column of links.
 */
const SORT_ORDERS = {
  newest: [
    ['created_at', 'desc'],
    ['id', 'desc'],
  ],
  oldest: [
    ['created_at', 'asc'],
    ['id', 'asc'],
  ],
  alias: [['alias', 'asc']],
  clicks: [
    ['click_count', 'desc'],
    ['id', 'asc'],
  ],
} as const satisfies Record<LinkSort, readonly OrderKey<LinkColumn | 'click_count'>[]>;

/**
 * What `matched` and the walks of the sorts other than clicks return: the id, plus every column
 * they order by. sort=clicks pages carry the id and click_count (from link_clicks).
 */
const PAGE_KEYS: readonly LinkColumn[] = [
  ...new Set<LinkColumn>([
    'id',
    ...Object.values(SORT_ORDERS)
      .flat()
      .flatMap(([column]) => (column === 'click_count' ? [] : [column])),
  ]),
];

function pageKeysOf(table: 'links') {
  return sql.join(PAGE_KEYS.map((column) => sql.ref(`${table}.${column}`)));
}

/** The sort's ORDER BY over `table`'s columns, or over the output columns without a table. */
function orderBy(sort: LinkSort, table?: 'matched' | 'links' | 'page') {
  return sql.join(
    SORT_ORDERS[sort].map(([column, direction]) => {
      const key = sql.ref(table === undefined ? column : `${table}.${column}`);
      return direction === 'desc' ? sql`${key} DESC` : sql`${key} ASC`;
    }),
  );
}

/**
 * A link's click count from link_clicks (no row: never clicked), as a correlated subquery: one
 * primary-key probe per row, never a join the planner could run as a scan of link_clicks.
 */
export function clickCountOf(id: RawBuilder<unknown>): RawBuilder<number> {
  return sql<number>`coalesce((SELECT link_clicks.click_count FROM link_clicks
    WHERE link_clicks.link_id = ${id}), 0)`;
}

/** Every column of a link (never links.*: see LinksRepository) and its count from link_clicks. */
function linkColumnsWithClicks() {
  return sql.join([
    ...LINK_COLUMNS.map((column) => sql.ref(`links.${column}`)),
    sql`${clickCountOf(sql.ref('links.id'))} AS click_count`,
  ]);
}

/** The list's exact total, as the `counted` CTE holds it. */
const TOTAL = sql<number>`(SELECT total FROM counted)`;

/**
 * One page and the total of all matches, in one statement and one snapshot (a sort=clicks page
 * that reaches the never-clicked links takes a second statement, itself whole: `unclicked`, see
 * LinksRepository.list). The page is fetched by one of two branches, chosen at run time by the
 * total, because no single plan is good for both:
 * - few matches (<= fewMatches): collect them through whichever index filters best (tags,
 *   trigram) and sort them. Walking a sort index instead would read every link of the app
 *   when a selective filter matches little or nothing.
 * - many matches: walk the sort's index and stop after offset + limit rows.
 * With a filter, the matches are collected once (`matched`, read lazily): the first
 * fewMatches + 1 of them tell whether they are few, and when they are, their count is the
 * total and the few branch sorts the same rows. Only above fewMatches is the total counted by
 * a second scan (counting first and collecting afterwards ran the trigram index scan twice).
 * Without a filter there is no `matched` and no few branch: the total is stored, and the page
 * walks the sort's index, which holds exactly the app's links in order, reading the page's
 * offset + limit entries whatever the app's size or its statistics. With
 * status=active alone it is the stored total minus the archived and expired links, both counted
 * through their partial indexes (counting the active ones read nearly every row).
 * A page past the end reads no rows beyond what counting needs. Branches return keys only;
 * the full rows of the page are joined afterwards, so deepLinkData of rows outside the page
 * is never read. Click counts live in link_clicks and are joined to the page's rows at the
 * end; sort=clicks is described at clicksWalk.
 */
export function listStatement(
  scope: LinkScope,
  query: LinkListQuery,
  plan: { fewMatches: number; unclicked: boolean },
): RawBuilder<PageRow> {
  const { limit, offset, sort } = query;
  const few = plan.fewMatches;
  const matches = linkMatches(expressionBuilder<Database, 'links'>(), scope, query);
  const many = sql<SqlBool>`${TOTAL} > ${few} AND ${TOTAL} > ${offset}`;
  const filtered = !isUnfiltered(query);
  const walk = { filtered, unclicked: plan.unclicked, limit, offset };
  // The few branch reads `matched` only when it holds at most `few` rows; the LIMIT says so to
  // the planner, whose estimate of the branch (a sort of every match, a million rows for a
  // broad filter) would otherwise reach jit_above_cost and compile the statement each time.
  const fewMatched = sql`(SELECT * FROM matched LIMIT ${few}) AS matched`;
  let page;
  if (sort !== 'clicks' && !filtered) {
    // Unfiltered, the sort's index holds exactly the app's links in order: walking it reads
    // offset + limit entries whatever the app's size, so there is no few branch to choose.
    page = sql`
        SELECT ${pageKeysOf('links')} FROM links WHERE ${matches} AND ${TOTAL} > ${offset}
        ORDER BY ${orderBy(sort, 'links')} LIMIT ${limit} OFFSET ${offset}`;
  } else if (sort !== 'clicks') {
    page = sql`
        (SELECT * FROM ${fewMatched} WHERE ${TOTAL} <= ${few} AND ${TOTAL} > ${offset}
         ORDER BY ${orderBy(sort, 'matched')} LIMIT ${limit} OFFSET ${offset})
        UNION ALL
        (SELECT ${pageKeysOf('links')} FROM links WHERE ${matches} AND ${many}
         ORDER BY ${orderBy(sort, 'links')} LIMIT ${limit} OFFSET ${offset})`;
  } else if (filtered) {
    page = sql`
        (SELECT matched.id, ${clickCountOf(sql.ref('matched.id'))} AS click_count
         FROM ${fewMatched}
         WHERE ${TOTAL} <= ${few} AND ${TOTAL} > ${offset}
         ORDER BY ${orderBy(sort)} LIMIT ${limit} OFFSET ${offset})
        UNION ALL
        (${clicksWalk(scope, matches, { ...walk, gate: many })})`;
  } else {
    // Unfiltered, the walks read offset + limit rows whatever the app's size: no few branch,
    // whose plan for a million rows would cost enough for Postgres to JIT-compile the
    // statement on every request.
    page = clicksWalk(scope, matches, { ...walk, gate: sql<SqlBool>`${TOTAL} > ${offset}` });
  }
  return sql<PageRow>`
      WITH ${filtered ? sql`matched AS MATERIALIZED (${matchedStatement(scope, query, few)}),` : sql``}
      counted AS (${totalStatement(scope, query, matches, few)}),
      page AS (${page})
      SELECT ${sql.join([...LINK_COLUMNS, 'click_count'].map((column) => sql.ref(`links.${column}`)))},
        counted.total, now() AS db_now
      FROM counted
      LEFT JOIN page ON true
      LEFT JOIN LATERAL (
        SELECT ${linkColumnsWithClicks()} FROM links
        WHERE links.id = page.id
          AND links.app_id = ${scope.appId} AND links.environment = ${scope.environment}
        -- An id is one row. The LIMIT keeps this a lookup by primary key per page row: flattened
        -- into a join, it could be planned (on stale statistics) as a scan of the app's links.
        LIMIT 1
      ) AS links ON true
      ORDER BY ${orderBy(sort, 'page')}
    `;
}

/**
 * A filtered list's matches, read lazily (see listStatement). An app with at most `few` links
 * in the environment (its stored count) has them read through its own index and each tested:
 * at most `few` rows, whatever the filter. The trigram index costs far more than the planner
 * thinks when the text shares trigrams with most links (every link's campaign starts with
 * "campaign-"): it decodes those trigrams' long posting lists for each candidate, tens of
 * milliseconds in a table of a million links, which the planner took over reading the app's
 * thousand rows. A larger app has its matches found through the filters' indexes. The branch
 * not taken is a one-time filter, so only one of the two ever runs.
 */
function matchedStatement(scope: LinkScope, filters: LinkFilters, few: number) {
  const eb = expressionBuilder<Database, 'links'>();
  const appIsSmall = sql<SqlBool>`${storedTotal(scope)} <= ${few}`;
  return sql`
    SELECT ${pageKeysOf('links')} FROM links
    WHERE ${linkMatches(eb, scope, filters, 'scanned')} AND ${appIsSmall}
    UNION ALL
    SELECT ${pageKeysOf('links')} FROM links
    WHERE ${linkMatches(eb, scope, filters)} AND NOT ${appIsSmall}`;
}

/**
 * sort=clicks (click_count DESC, id ASC) by walking indexes, when `gate` holds. Counts live in
 * link_clicks, which has a row only for a link clicked at least once, so the order is two
 * walks, each stopping after offset + limit rows:
 * - clicked: link_clicks_order_idx (app, environment, click_count DESC, link_id); every one of
 *   them has at least one click. Unfiltered, the index alone answers (app and environment are
 *   copied into link_clicks); with filters each link is joined to test them.
 * - unclicked, only with `unclicked` (LinksRepository.list asks for it when the clicked ones
 *   ran out before the page was full): links by id (links_app_id_order_idx) without a count,
 *   after every clicked link (0 after >= 1); started only when the clicked ones cannot fill
 *   offset + limit (an InitPlan gate). The skip is a correlated test, not NOT EXISTS: an
 *   anti-join is estimated to find (almost) nothing when most links were clicked, and was
 *   planned as a parallel hash join of both tables. Even gated off, this walk is planned for
 *   the whole app, a cost that makes Postgres JIT-compile the statement, which is why the
 *   usual pages leave it out.
 * Reaching the unclicked links passes over the app's clicked ones, as deep pages of any sort
 * pass over the pages before them.
 */
function clicksWalk(
  scope: LinkScope,
  matches: Expression<SqlBool>,
  walk: {
    filtered: boolean;
    unclicked: boolean;
    limit: number;
    offset: number;
    gate: Expression<SqlBool>;
  },
) {
  const { limit, offset, gate } = walk;
  const clicked = walk.filtered
    ? sql`SELECT links.id, link_clicks.click_count
          FROM link_clicks JOIN links ON links.id = link_clicks.link_id
          WHERE link_clicks.app_id = ${scope.appId}
            AND link_clicks.environment = ${scope.environment} AND ${matches} AND ${gate}`
    : sql`SELECT link_clicks.link_id AS id, link_clicks.click_count
          FROM link_clicks
          WHERE link_clicks.app_id = ${scope.appId}
            AND link_clicks.environment = ${scope.environment} AND ${gate}`;
  const clickOrder = sql`ORDER BY link_clicks.click_count DESC, link_clicks.link_id ASC`;
  if (!walk.unclicked) return sql`${clicked} ${clickOrder} LIMIT ${limit} OFFSET ${offset}`;
  const wanted = offset + limit;
  return sql`
    WITH clicked AS MATERIALIZED (${clicked} ${clickOrder} LIMIT ${wanted}),
    unclicked AS (
      SELECT links.id, 0::bigint AS click_count
      FROM links
      WHERE ${matches} AND (SELECT count(*) FROM clicked) < ${wanted} AND ${gate}
        AND (SELECT true FROM link_clicks WHERE link_clicks.link_id = links.id) IS NULL
      ORDER BY links.id ASC
      LIMIT ${wanted}
    )
    SELECT * FROM (SELECT * FROM clicked UNION ALL SELECT * FROM unclicked) AS both_walks
    ORDER BY ${orderBy('clicks')} LIMIT ${limit} OFFSET ${offset}`;
}

/** The `counted` CTE: one row holding the exact total of the list's matches. */
function totalStatement(
  scope: LinkScope,
  filters: LinkFilters,
  matches: Expression<SqlBool>,
  few: number,
) {
  if (isUnfiltered(filters)) return sql`SELECT ${storedTotal(scope)} AS total`;
  if (isOnlyActive(filters)) {
    // Every link minus the archived and the expired ones, the statuses' exact complement.
    return sql`SELECT ${storedTotal(scope)} - ${statusCount(scope, 'archived')}
      - ${statusCount(scope, 'expired')} AS total`;
  }
  // The first few + 1 rows of `matched` tell whether the matches are few. CASE evaluates the
  // uncorrelated count subquery (an InitPlan) only when they are not.
  return sql`SELECT CASE WHEN capped.n <= ${few} THEN capped.n
      ELSE (SELECT count(*) FROM links WHERE ${matches}) END AS total
    FROM (SELECT count(*) AS n
          FROM (SELECT FROM matched LIMIT ${few + 1}) AS first_matches) AS capped`;
}

function isUnfiltered(filters: LinkFilters): boolean {
  return filters.search === undefined && filters.tag === undefined && filters.status === undefined;
}

function isOnlyActive(filters: LinkFilters): boolean {
  return filters.search === undefined && filters.tag === undefined && filters.status === 'active';
}

/**
 * Without filters the total is every link of the app and environment: read it from the app's
 * count of the environment (kept by a trigger in the inserting transaction, so it matches this
 * snapshot) instead of counting a million rows.
 */
function storedTotal(scope: LinkScope) {
  const count = sql.ref(`apps.${LINK_COUNT_OF[scope.environment]}`);
  return sql`coalesce((SELECT ${count} FROM apps WHERE apps.id = ${scope.appId}), 0)`;
}

const LINK_COUNT_OF = {
  live: 'live_link_count',
  test: 'test_link_count',
} as const satisfies Record<Environment, keyof Database['apps']>;

/**
 * Links of one status, counted with the same condition a list filtered by it uses (archived
 * and expired are read through their partial indexes).
 */
function statusCount(scope: LinkScope, status: LinkStatusFilter) {
  const matches = linkMatches(expressionBuilder<Database, 'links'>(), scope, {
    search: undefined,
    tag: undefined,
    status,
  });
  return sql`(SELECT count(*) FROM links WHERE ${matches})`;
}
