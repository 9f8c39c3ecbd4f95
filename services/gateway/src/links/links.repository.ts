import type { Expression, Kysely, SelectQueryBuilder, SqlBool } from 'kysely';
import { sql } from 'kysely';
import type { LinkChanges } from '@linkservice/contracts';
import { columnChangesOf, LINK_COLUMNS } from '@linkservice/contracts';
import type { CountedLinkRow, Database, Environment } from '@linkservice/db';
import { executePrepared, preparedStatement } from '@linkservice/db';
import type { AuthContext } from '../auth/auth-context';
import type { KeyRow } from '../auth/keys.repository';
import { activeKeyStatement, toAuthContext } from '../auth/keys.repository';

/** Whose links a query may see: always the app and environment of the authenticating key. */
export interface LinkScope {
  appId: string;
  environment: Environment;
}

export type LinkStatusFilter = 'active' | 'archived' | 'expired';
export type LinkSort = 'newest' | 'oldest' | 'alias' | 'clicks';

export interface LinkListQuery {
  /** Matched case-insensitively as a literal substring (no wildcards). */
  search: string | undefined;
  tag: string | undefined;
  status: LinkStatusFilter | undefined;
  sort: LinkSort;
  limit: number;
  offset: number;
}

/** A row together with the database clock it was read at, so status matches the SQL filters. */
export interface LinkRead {
  row: CountedLinkRow;
  now: Date;
}

export interface LinkPage {
  rows: CountedLinkRow[];
  total: number;
  now: Date;
}

/** A link's columns as a LEFT JOIN gives them: all null when no link matched. */
type NullableLinkRow = { [K in keyof CountedLinkRow]: CountedLinkRow[K] | null };

/** A row of the list statement: the LEFT JOINed link columns are all null on an empty page. */
type PageRow = NullableLinkRow & { total: number; db_now: Date };

/** What is left of a link the conditional UPDATE did not touch. */
export type LinkState = 'missing' | 'archived' | 'active';

type LinksQuery = SelectQueryBuilder<Database, 'links', object>;

/**
 * Every column of a link, read by name (never links.*: the previous release's click_count
 * column is still there, see the link-clicks migration), and its click count from link_clicks,
 * which holds a row only for a link clicked at least once.
 */
const SELECT_LINK_COLUMNS = [
  ...LINK_COLUMNS.map((column) => `links.${column}`),
  'coalesce(link_clicks.click_count, 0) AS click_count',
].join(', ');

/** Joins the count SELECT_LINK_COLUMNS reads; needs `links` in the FROM list before it. */
const JOIN_CLICKS = 'LEFT JOIN link_clicks ON link_clicks.link_id = links.id';

/** RETURNING of an UPDATE of links: the row as it now stands, with its click count. */
const RETURNING_LINK = [
  ...LINK_COLUMNS,
  sql<number>`coalesce((SELECT click_count FROM link_clicks WHERE link_id = links.id), 0)`.as(
    'click_count',
  ),
] as const;

/** A read by id: prepared, parsed once per connection. */
const FIND_BY_ID = preparedStatement<CountedLinkRow & { db_now: Date }>(
  'gateway_link_by_id',
  `SELECT ${SELECT_LINK_COLUMNS}, now() AS db_now
   FROM links ${JOIN_CLICKS}
   WHERE links.id = $1 AND links.app_id = $2 AND links.environment = $3`,
);

/**
 * GET /links/{id}, key check included: the key lookup's statement with the link LEFT JOINed in
 * the key's app and environment. No row: no active key has the hash. A row whose link columns
 * are null: the key is good and its app and environment have no such link.
 */
const FIND_BY_ID_FOR_KEY = preparedStatement<KeyRow & NullableLinkRow & { db_now: Date }>(
  'gateway_link_by_id_for_key',
  activeKeyStatement({
    columns: `${SELECT_LINK_COLUMNS}, now() AS db_now`,
    join: `LEFT JOIN links ON links.id = $2 AND links.app_id = api_keys.app_id
     AND links.environment = api_keys.environment ${JOIN_CLICKS}`,
  }),
);

/** What an API key's GET by id found: the key's context, and the link when it has one. */
export interface KeyedLinkRead {
  auth: AuthContext;
  link: LinkRead | undefined;
}

/** Escapes LIKE's wildcards and its escape character, so the search text matches literally. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

/** Only the link repository knows SQL; every statement is scoped by app and environment. */
export interface LinksRepositoryOptions {
  /** See FEW_MATCHES; tests lower it to exercise both list strategies on small data. */
  fewMatches?: number;
}

export class LinksRepository {
  private readonly fewMatches: number;

  constructor(
    private readonly db: Kysely<Database>,
    options: LinksRepositoryOptions = {},
  ) {
    this.fewMatches = options.fewMatches ?? FEW_MATCHES;
  }

  private scoped(scope: LinkScope): LinksQuery {
    return this.db
      .selectFrom('links')
      .where('links.app_id', '=', scope.appId)
      .where('links.environment', '=', scope.environment);
  }

  async findById(scope: LinkScope, id: string): Promise<LinkRead | undefined> {
    const rows = await executePrepared(this.db, FIND_BY_ID, [id, scope.appId, scope.environment]);
    const found = rows.at(0);
    if (!found) return undefined;
    const { db_now: now, ...row } = found;
    return { row, now };
  }

  /**
   * The active API key with this hash and, in its app and environment, the link with this id,
   * in one round trip; undefined when no active key has the hash. A null id matches no link.
   */
  async findByIdForKey(keyHash: Buffer, id: string | null): Promise<KeyedLinkRead | undefined> {
    const found = (await executePrepared(this.db, FIND_BY_ID_FOR_KEY, [keyHash, id])).at(0);
    if (!found) return undefined;
    const {
      keyId,
      keyEnvironment,
      keyType,
      appId,
      appName,
      subdomainKey,
      db_now: now,
      ...link
    } = found;
    return {
      auth: toAuthContext({ keyId, keyEnvironment, keyType, appId, appName, subdomainKey }),
      // Every link has an id: a null one is the LEFT JOIN finding none.
      link: link.id === null ? undefined : { row: link as CountedLinkRow, now },
    };
  }

  /** Tells apart the reasons a conditional UPDATE matched no row. */
  async stateOf(scope: LinkScope, id: string): Promise<LinkState> {
    const found = await this.scoped(scope)
      .select('links.archived_at')
      .where('links.id', '=', id)
      .executeTakeFirst();
    if (!found) return 'missing';
    return found.archived_at ? 'archived' : 'active';
  }

  /**
   * Applies the changes to a link that is not archived, in one statement: race-free against a
   * concurrent archive, and `updated_at` moves only when a value really differs. On the right
   * of SET, columns still hold their old values, so IS DISTINCT FROM compares old with new
   * (jsonb equality ignores key order; arrays compare element by element, in order).
   * `alias`, when given, must equal the link's alias or nothing is updated.
   */
  async updateActive(
    scope: LinkScope,
    id: string,
    changes: LinkChanges,
    alias?: string,
  ): Promise<CountedLinkRow | undefined> {
    const set: Record<string, unknown> = {};
    const differences: Expression<SqlBool>[] = [];
    for (const { column, value, sqlType } of columnChangesOf(changes)) {
      const typed = sql`cast(${value} as ${sql.raw(sqlType)})`;
      set[column] = typed;
      differences.push(sql<SqlBool>`${sql.ref(`links.${column}`)} IS DISTINCT FROM ${typed}`);
    }
    if (differences.length === 0) throw new Error('updateActive needs at least one change');

    let query = this.db
      .updateTable('links')
      .set({
        ...set,
        updated_at: sql<Date>`CASE WHEN ${sql.join(differences, sql` OR `)} THEN now() ELSE links.updated_at END`,
      })
      .where('links.app_id', '=', scope.appId)
      .where('links.environment', '=', scope.environment)
      .where('links.id', '=', id)
      .where('links.archived_at', 'is', null);
    if (alias !== undefined) query = query.where('links.alias', '=', alias);
    return query.returning(RETURNING_LINK).executeTakeFirst();
  }

  /** Sets archived_at once: a link already archived is left as it is (no row comes back). */
  async archiveActive(scope: LinkScope, id: string): Promise<CountedLinkRow | undefined> {
    return this.db
      .updateTable('links')
      .set({ archived_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
      .where('links.app_id', '=', scope.appId)
      .where('links.environment', '=', scope.environment)
      .where('links.id', '=', id)
      .where('links.archived_at', 'is', null)
      .returning(RETURNING_LINK)
      .executeTakeFirst();
  }

  /**
   * One page and the total of all matches, in one statement and one snapshot (a sort=clicks
   * page that reaches the never-clicked links takes a second statement, itself whole: see
   * below). The page is
   * fetched by one of two branches, chosen at run time by the total, because no single plan is
   * good for both:
   * - few matches (<= fewMatches): collect them through whichever index filters best (tags,
   *   trigram) and sort them. Walking a sort index instead would read every link of the app
   *   when a selective filter matches little or nothing (seconds at 1M links).
   * - many matches: walk the sort's index and stop after offset + limit rows.
   * With a filter, the matches are collected once (`matched`, read lazily): the first
   * fewMatches + 1 of them tell whether they are few, and when they are, their count is the
   * total and the few branch sorts the same rows. Only above fewMatches is the total counted by
   * a second scan. (Counting first and collecting afterwards ran the trigram index scan twice,
   * ~30 ms each at 1M links when most of the pattern's trigrams occur in every row.) Without a
   * filter the total is stored, and `matched` is read only when it is few; with status=active
   * alone it is the stored total minus the archived and expired links, both counted through
   * their partial indexes (counting the active ones read nearly every row).
   * A page past the end reads no rows beyond what counting needs. Branches return keys only;
   * the full rows of the page are joined afterwards, so deepLinkData of rows outside the page
   * is never read. Click counts live in link_clicks and are joined to the page's rows at the
   * end; sort=clicks is described at clicksWalk.
   */
  async list(scope: LinkScope, query: LinkListQuery): Promise<LinkPage> {
    const page = await this.listStatement(scope, query, { unclicked: false });
    // sort=clicks walks the clicked links first (see clicksWalk). A short page with more
    // matches after it ran out of them: the statement again, this time walking on into the
    // links never clicked, which only pages at the end of the order need.
    const { sort, limit, offset } = query;
    if (sort === 'clicks' && page.rows.length < limit && offset + page.rows.length < page.total)
      return this.listStatement(scope, query, { unclicked: true });
    return page;
  }

  private async listStatement(
    scope: LinkScope,
    query: LinkListQuery,
    { unclicked }: { unclicked: boolean },
  ): Promise<LinkPage> {
    const matches = matchCondition(scope, query);
    const { limit, offset, sort } = query;
    const few = this.fewMatches;
    const counting = totalStatement(scope, query, matches, few);
    const total = sql`(SELECT total FROM counted)`;
    const many = sql`${total} > ${few} AND ${total} > ${offset}`;
    const filtered = !isUnfiltered(query);
    let page;
    if (sort !== 'clicks') {
      page = sql`
        (SELECT * FROM matched WHERE ${total} <= ${few} AND ${total} > ${offset}
         ORDER BY ${orderBy(sort, 'matched')} LIMIT ${limit} OFFSET ${offset})
        UNION ALL
        (SELECT ${PAGE_KEYS} FROM links WHERE ${matches} AND ${many}
         ORDER BY ${orderBy(sort, 'links')} LIMIT ${limit} OFFSET ${offset})`;
    } else if (filtered) {
      page = sql`
        (SELECT matched.id, coalesce(link_clicks.click_count, 0) AS click_count
         FROM matched LEFT JOIN link_clicks ON link_clicks.link_id = matched.id
         WHERE ${total} <= ${few} AND ${total} > ${offset}
         ORDER BY ${orderBy(sort, undefined)} LIMIT ${limit} OFFSET ${offset})
        UNION ALL
        (${clicksWalk(scope, matches, { filtered, unclicked, limit, offset, gate: many })})`;
    } else {
      // Unfiltered, the walks read offset + limit rows whatever the app's size: no few branch,
      // whose plan for a million rows would cost enough for Postgres to JIT-compile the
      // statement on every request (~100 ms at 1M links).
      const gate = sql`${total} > ${offset}`;
      page = clicksWalk(scope, matches, { filtered, unclicked, limit, offset, gate });
    }
    const result = await sql<PageRow>`
      WITH matched AS MATERIALIZED (
        SELECT ${PAGE_KEYS} FROM links WHERE ${matches}
      ),
      counted AS (${counting}),
      page AS (${page})
      SELECT ${sql.raw(SELECT_LINK_COLUMNS)}, counted.total, now() AS db_now
      FROM counted
      LEFT JOIN page ON true
      LEFT JOIN links ON links.id = page.id
        AND links.app_id = ${scope.appId} AND links.environment = ${scope.environment}
      ${sql.raw(JOIN_CLICKS)}
      ORDER BY ${orderBy(sort, 'page')}
    `.execute(this.db);

    const first = result.rows.at(0);
    if (!first) throw new Error('the count CTE always yields one row');
    const rows = result.rows.flatMap(({ total: _total, db_now: _now, ...row }) => {
      // An empty page comes back as one row of nulls beside the total; a link always has an id.
      return row.id === null ? [] : [row as CountedLinkRow];
    });
    return { rows, total: first.total, now: first.db_now };
  }
}

/**
 * Up to this many matches, a list collects and sorts them rather than walking a sort index.
 * Sorting 10,000 keys takes milliseconds; above it, matches are dense enough in an app's links
 * that an index walk finds a page quickly.
 */
const FEW_MATCHES = 10_000;

/**
 * What `matched` and the walks of the other sorts return: the id, plus every column they order
 * by. sort=clicks pages carry the id and click_count (from link_clicks).
 */
const PAGE_KEYS = sql.raw('links.id, links.created_at, links.alias');

/**
 * Each order matches an index (oldest walks links_newest_idx backwards; clicks walks
 * link_clicks_order_idx, then links_app_id_order_idx, see clicksWalk); ties break by id so
 * pages never overlap. alias is unique per app and environment and COLLATE "C" (code-point
 * order), so it has no ties. Column names come from this fixed table, never from the request.
 */
const SORT_KEYS: Record<LinkSort, readonly string[]> = {
  newest: ['created_at DESC', 'id DESC'],
  oldest: ['created_at ASC', 'id ASC'],
  alias: ['alias ASC'],
  clicks: ['click_count DESC', 'id ASC'],
};

/** The sort's ORDER BY over `table`'s columns, or over the output columns without a table. */
function orderBy(sort: LinkSort, table: 'matched' | 'links' | 'page' | undefined) {
  const prefix = table === undefined ? '' : `${table}.`;
  return sql.raw(SORT_KEYS[sort].map((key) => `${prefix}${key}`).join(', '));
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
 *   the whole app, a cost that makes Postgres JIT-compile the statement (a second or more at
 *   1M links), which is why the usual pages leave it out.
 * Reaching the unclicked links passes over the app's clicked ones, as deep pages of any sort
 * pass over the pages before them.
 */
function clicksWalk(
  scope: LinkScope,
  matches: ReturnType<typeof matchCondition>,
  walk: {
    filtered: boolean;
    unclicked: boolean;
    limit: number;
    offset: number;
    gate: ReturnType<typeof sql>;
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
    ORDER BY ${orderBy('clicks', undefined)} LIMIT ${limit} OFFSET ${offset}`;
}

/** The `counted` CTE: one row holding the exact total of the list's matches. */
function totalStatement(
  scope: LinkScope,
  filters: LinkFilters,
  matches: ReturnType<typeof matchCondition>,
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

function isUnfiltered(query: LinkFilters): boolean {
  return query.search === undefined && query.tag === undefined && query.status === undefined;
}

function isOnlyActive(query: LinkFilters): boolean {
  return query.search === undefined && query.tag === undefined && query.status === 'active';
}

/**
 * Without filters the total is every link of the app and environment: read it from the app's
 * count of the environment (kept by a trigger in the inserting transaction, so it matches this
 * snapshot) instead of counting a million rows.
 */
function storedTotal(scope: LinkScope) {
  const count = sql.ref(LINK_COUNT_OF[scope.environment]);
  return sql`coalesce((SELECT ${count} FROM apps WHERE id = ${scope.appId}), 0)`;
}

const LINK_COUNT_OF: Record<Environment, 'live_link_count' | 'test_link_count'> = {
  live: 'live_link_count',
  test: 'test_link_count',
};

/**
 * Links of one status, counted with the same condition a list filtered by it uses (archived
 * and expired are read through their partial indexes).
 */
function statusCount(scope: LinkScope, status: LinkStatusFilter) {
  return sql`(SELECT count(*) FROM links
    WHERE ${matchCondition(scope, { search: undefined, tag: undefined, status })})`;
}

type LinkFilters = Pick<LinkListQuery, 'search' | 'tag' | 'status'>;

/** The scope and every filter of a list, ANDed; all values are bound parameters. */
function matchCondition(scope: LinkScope, query: LinkFilters) {
  const conditions = [
    sql`links.app_id = ${scope.appId}`,
    sql`links.environment = ${scope.environment}`,
  ];
  if (query.search !== undefined) {
    // search_text is lower(...) of the searchable fields (see the initial migration); lower()
    // on both sides keeps case folding identical. The pattern is a constant of the statement,
    // so the trigram index on search_text serves it.
    conditions.push(
      sql`links.search_text LIKE '%' || lower(${escapeLike(query.search)}) || '%' ESCAPE '\\'`,
    );
  }
  if (query.tag !== undefined) {
    // @> with a one-element array is what the GIN index on tags answers.
    conditions.push(sql`links.tags @> cast(${[query.tag]} as text[])`);
  }
  switch (query.status) {
    case 'archived':
      conditions.push(sql`links.archived_at IS NOT NULL`);
      break;
    case 'expired':
      conditions.push(sql`links.archived_at IS NULL AND links.expires_at <= now()`);
      break;
    case 'active':
      conditions.push(
        sql`links.archived_at IS NULL AND (links.expires_at IS NULL OR links.expires_at > now())`,
      );
      break;
    case undefined:
      break;
  }
  return sql.join(conditions, sql` AND `);
}
