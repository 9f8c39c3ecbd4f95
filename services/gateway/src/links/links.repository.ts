import type { Expression, Kysely, OperationNodeSource, SelectQueryBuilder, SqlBool } from 'kysely';
import { sql } from 'kysely';
import type { LinkChanges } from '@linkservice/contracts';
import { columnChangesOf, LINK_COLUMNS } from '@linkservice/contracts';
import type { CountedLinkRow, Database, FenceLookup, ReadFence } from '@linkservice/db';
import { fenceOfFirstRow, NO_FENCE } from '@linkservice/db';
import { constantStatement, executeStatement, ReplicaReads } from '@linkservice/db';
import { activeTraceparent } from '@linkservice/telemetry';
import type { WebhookEventType } from '@linkservice/webhooks';
import { outboxCtes } from '@linkservice/webhooks';
import type { AuthContext } from '../auth/auth-context';
import type { KeyRow } from '../auth/keys.repository';
import { activeKeyStatement, toAuthContext } from '../auth/keys.repository';
import type { LinkListQuery, LinkScope, NullableLinkRow, PageRow } from './list-query.sql';
import { clickCountOf, FEW_MATCHES, listStatement } from './list-query.sql';

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
  clickCountOf(sql.ref('links.id')).as('click_count'),
] as const;

/**
 * The outbox CTEs of a change to one link (`changed`: the UPDATE's RETURNING), with the trace
 * context the statement binds in `trace`. link.updated is written only when a value really
 * changed: updated_at then moved to now(), the transaction's clock (see updateActive).
 */
function linkChangeEvents(type: WebhookEventType, where?: string): string {
  return outboxCtes({
    from: 'changed',
    type,
    appId: 'changed.app_id',
    environment: 'changed.environment',
    subject: 'changed.id',
    snapshot: 'to_jsonb(changed)',
    traceparent: '(SELECT traceparent FROM trace)',
    ...(where === undefined ? {} : { where }),
  });
}

const LINK_UPDATED_EVENTS = linkChangeEvents('link.updated', 'changed.updated_at = now()');
const LINK_ARCHIVED_EVENTS = linkChangeEvents('link.archived');

/** A read by id: a constant statement, built once. */
const FIND_BY_ID = constantStatement<CountedLinkRow & { db_now: Date }>(
  `SELECT ${SELECT_LINK_COLUMNS}, now() AS db_now
   FROM links ${JOIN_CLICKS}
   WHERE links.id = $1 AND links.app_id = $2 AND links.environment = $3`,
);

/**
 * GET /links/{id}, key check included: the key lookup's statement with the link LEFT JOINed in
 * the key's app and environment. No row: no active key has the hash. A row whose link columns
 * are null: the key is good and its app and environment have no such link.
 */
const FIND_BY_ID_FOR_KEY = constantStatement<KeyRow & NullableLinkRow & { db_now: Date }>(
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

/** Only the link repository knows SQL; every statement is scoped by app and environment. */
export interface LinksRepositoryOptions {
  /** See FEW_MATCHES; tests lower it to exercise both list strategies on small data. */
  fewMatches?: number;
  /** Where GET by id and lists are read (DATABASE_READ_URL); the primary (`db`) by default. */
  reads?: ReplicaReads;
}

export class LinksRepository {
  private readonly fewMatches: number;
  private readonly reads: ReplicaReads;

  constructor(
    private readonly db: Kysely<Database>,
    options: LinksRepositoryOptions = {},
  ) {
    this.fewMatches = options.fewMatches ?? FEW_MATCHES;
    this.reads = options.reads ?? new ReplicaReads({ primary: db, replica: undefined });
  }

  private scoped(scope: LinkScope): LinksQuery {
    return this.db
      .selectFrom('links')
      .where('links.app_id', '=', scope.appId)
      .where('links.environment', '=', scope.environment);
  }

  async findById(scope: LinkScope, id: string): Promise<LinkRead | undefined> {
    const rows = await executeStatement(this.db, FIND_BY_ID, [id, scope.appId, scope.environment]);
    const found = rows.at(0);
    if (!found) return undefined;
    const { db_now: now, ...row } = found;
    return { row, now };
  }

  /**
   * The active API key with this hash and, in its app and environment, the link with this id,
   * in one round trip; undefined when no active key has the hash. A null id matches no link.
   */
  async findByIdForKey(
    keyHash: Buffer,
    id: string | null,
    fenceOf: FenceLookup = NO_FENCE,
  ): Promise<KeyedLinkRead | undefined> {
    const rows = await this.reads.read({
      run: (db) => executeStatement(db, FIND_BY_ID_FOR_KEY, [keyHash, id]),
      // No key (one made a moment ago) or no link (one created a moment ago): ask the primary.
      found: (rows) => rows.at(0)?.id != null,
      fence: fenceOfFirstRow(fenceOf, (row) => ({
        appId: row.appId,
        environment: row.keyEnvironment,
      })),
    });
    const found = rows.at(0);
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
    return this.withEvents(query.returning(RETURNING_LINK), LINK_UPDATED_EVENTS);
  }

  /** Sets archived_at once: a link already archived is left as it is (no row comes back). */
  async archiveActive(scope: LinkScope, id: string): Promise<CountedLinkRow | undefined> {
    const update = this.db
      .updateTable('links')
      .set({ archived_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
      .where('links.app_id', '=', scope.appId)
      .where('links.environment', '=', scope.environment)
      .where('links.id', '=', id)
      .where('links.archived_at', 'is', null)
      .returning(RETURNING_LINK);
    return this.withEvents(update, LINK_ARCHIVED_EVENTS);
  }

  /**
   * Runs an UPDATE of one link with its outbox CTEs in one statement (so the event commits with
   * the change, or neither does) and returns the row the UPDATE returned. The event carries the
   * request's trace context, so its delivery continues the request's trace.
   */
  private async withEvents(
    update: OperationNodeSource,
    events: string,
  ): Promise<CountedLinkRow | undefined> {
    const { rows } = await sql<CountedLinkRow>`
      WITH changed AS (${update}),
      trace AS (SELECT ${activeTraceparent() ?? ''}::text AS traceparent),
      ${sql.raw(events)}
      SELECT * FROM changed`.execute(this.db);
    return rows.at(0);
  }

  /**
   * One page of a list and the total of its matches: one statement (listStatement tells its
   * strategies), two for a sort=clicks page that reaches the never-clicked links.
   */
  async list(
    scope: LinkScope,
    query: LinkListQuery,
    fence: ReadFence | 'unknown' = {},
  ): Promise<LinkPage> {
    return this.reads.read({
      run: (db) => this.listOn(db, scope, query),
      // An empty page may be a replica that has not seen the first link yet.
      found: (page) => page.total > 0,
      fence,
    });
  }

  private async listOn(
    db: Kysely<Database>,
    scope: LinkScope,
    query: LinkListQuery,
  ): Promise<LinkPage> {
    const page = await this.listPage(db, scope, query, { unclicked: false });
    // sort=clicks walks the clicked links first (see clicksWalk). A short page with more
    // matches after it ran out of them: the statement again, this time walking on into the
    // links never clicked, which only pages at the end of the order need.
    const { sort, limit, offset } = query;
    if (sort === 'clicks' && page.rows.length < limit && offset + page.rows.length < page.total)
      return this.listPage(db, scope, query, { unclicked: true });
    return page;
  }

  private async listPage(
    db: Kysely<Database>,
    scope: LinkScope,
    query: LinkListQuery,
    { unclicked }: { unclicked: boolean },
  ): Promise<LinkPage> {
    const statement = listStatement(scope, query, {
      fewMatches: this.fewMatches,
      unclicked,
    });
    // The text depends only on the query's shape (sort, which filters, the unclicked walk; every
    // value is a parameter), so the shapes are few and each is prepared once per connection.
    const compiled = statement.compile(db);
    const rows = await executeStatement(
      db,
      constantStatement<PageRow>(compiled.sql),
      compiled.parameters,
    );
    const first = rows.at(0);
    if (!first) throw new Error('the count CTE always yields one row');
    const page = rows.flatMap(({ total: _total, db_now: _now, ...row }) => {
      // An empty page comes back as one row of nulls beside the total; a link always has an id.
      return row.id === null ? [] : [row as CountedLinkRow];
    });
    return { rows: page, total: first.total, now: first.db_now };
  }
}
