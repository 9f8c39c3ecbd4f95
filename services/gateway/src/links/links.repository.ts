import type { Expression, Kysely, SelectQueryBuilder, SqlBool } from 'kysely';
import { sql } from 'kysely';
import type { LinkChanges } from '@linkservice/contracts';
import type { Database, Environment, LinkRow } from '@linkservice/db';

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
  row: LinkRow;
  now: Date;
}

export interface LinkPage {
  rows: LinkRow[];
  total: number;
  now: Date;
}

/** What is left of a link the conditional UPDATE did not touch. */
export type LinkState = 'missing' | 'archived' | 'active';

type LinksQuery = SelectQueryBuilder<Database, 'links', object>;

/** Escapes LIKE's wildcards and its escape character, so the search text matches literally. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (char) => `\\${char}`);
}

/**
 * jsonb and text[] parameters: pg would send a JS object as JSON text anyway, but an explicit
 * string keeps `{}` from being confused with an array literal.
 */
function jsonbValue(value: Record<string, unknown> | null): string | null {
  return value === null ? null : JSON.stringify(value);
}

/** Only the link repository knows SQL; every statement is scoped by app and environment. */
export class LinksRepository {
  constructor(private readonly db: Kysely<Database>) {}

  private scoped(scope: LinkScope): LinksQuery {
    return this.db
      .selectFrom('links')
      .where('links.app_id', '=', scope.appId)
      .where('links.environment', '=', scope.environment);
  }

  async findById(scope: LinkScope, id: string): Promise<LinkRead | undefined> {
    const found = await this.scoped(scope)
      .selectAll('links')
      .select(sql<Date>`now()`.as('db_now'))
      .where('links.id', '=', id)
      .executeTakeFirst();
    if (!found) return undefined;
    const { db_now: now, ...row } = found;
    return { row, now };
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
  ): Promise<LinkRow | undefined> {
    const values = {
      web_fallback_url: changes.webFallbackUrl,
      ios_fallback_url: changes.iosFallbackUrl,
      deep_link_data:
        changes.deepLinkData === undefined ? undefined : jsonbValue(changes.deepLinkData),
      title: changes.title,
      campaign: changes.campaign,
      channel: changes.channel,
      feature: changes.feature,
      tags: changes.tags,
      expires_at: changes.expiresAt,
    };
    const casts = {
      web_fallback_url: 'text',
      ios_fallback_url: 'text',
      deep_link_data: 'jsonb',
      title: 'text',
      campaign: 'text',
      channel: 'text',
      feature: 'text',
      tags: 'text[]',
      expires_at: 'timestamptz',
    } as const;
    const set: Record<string, unknown> = {};
    const differences: Expression<SqlBool>[] = [];
    for (const [column, value] of Object.entries(values) as [keyof typeof values, unknown][]) {
      if (value === undefined) continue;
      const typed = sql`cast(${value} as ${sql.raw(casts[column])})`;
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
    return query.returningAll().executeTakeFirst();
  }

  /** Sets archived_at once: a link already archived is left as it is (no row comes back). */
  async archiveActive(scope: LinkScope, id: string): Promise<LinkRow | undefined> {
    return this.db
      .updateTable('links')
      .set({ archived_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
      .where('links.app_id', '=', scope.appId)
      .where('links.environment', '=', scope.environment)
      .where('links.id', '=', id)
      .where('links.archived_at', 'is', null)
      .returningAll()
      .executeTakeFirst();
  }

  /**
   * One page and the total of all matches, in one statement and one snapshot: the count is a
   * one-row subquery, the page is LEFT JOINed to it, so a page past the end still yields the
   * total (as a single row without a link).
   */
  async list(scope: LinkScope, query: LinkListQuery): Promise<LinkPage> {
    const matching = () => this.filtered(scope, query);
    const page = this.ordered(matching().selectAll('links'), query.sort)
      .limit(query.limit)
      .offset(query.offset);
    const result = await this.db
      .selectFrom(
        matching()
          .select((eb) => eb.fn.countAll<number>().as('total'))
          .as('matched'),
      )
      .leftJoin(page.as('page'), (join) => join.onTrue())
      .selectAll('page')
      .select(['matched.total', sql<Date>`now()`.as('db_now')])
      .execute();

    const first = result.at(0);
    if (!first) throw new Error('the count subquery always yields one row');
    const rows = result.flatMap(({ total: _total, db_now: _now, ...row }) => {
      // A page past the end comes back as one row of nulls; a real row always has an id.
      return row.id === null ? [] : [row as LinkRow];
    });
    return { rows, total: first.total, now: first.db_now };
  }

  private filtered(scope: LinkScope, query: LinkListQuery): LinksQuery {
    let q = this.scoped(scope);
    if (query.search !== undefined) {
      // search_text is lower(...) of the searchable fields (see the initial migration); lower()
      // on both sides keeps case folding identical. The pattern is a constant of the statement,
      // so the trigram index on search_text serves it.
      q = q.where(
        sql<SqlBool>`links.search_text LIKE '%' || lower(${escapeLike(query.search)}) || '%' ESCAPE '\\'`,
      );
    }
    if (query.tag !== undefined) {
      q = q.where(sql<SqlBool>`links.tags @> cast(${[query.tag]} as text[])`);
    }
    switch (query.status) {
      case 'archived':
        q = q.where('links.archived_at', 'is not', null);
        break;
      case 'expired':
        q = q.where('links.archived_at', 'is', null).where(sql<SqlBool>`links.expires_at <= now()`);
        break;
      case 'active':
        q = q
          .where('links.archived_at', 'is', null)
          .where(sql<SqlBool>`(links.expires_at IS NULL OR links.expires_at > now())`);
        break;
      case undefined:
        break;
    }
    return q;
  }

  /** Each order matches an index of the initial migration; ties break by id. */
  private ordered<O>(
    q: SelectQueryBuilder<Database, 'links', O>,
    sort: LinkSort,
  ): SelectQueryBuilder<Database, 'links', O> {
    switch (sort) {
      case 'newest':
        return q.orderBy('links.created_at', 'desc').orderBy('links.id', 'desc');
      case 'oldest':
        return q.orderBy('links.created_at', 'asc').orderBy('links.id', 'asc');
      case 'alias':
        // Unique per app and environment and COLLATE "C": code-point order, no ties to break.
        return q.orderBy('links.alias', 'asc');
      case 'clicks':
        return q.orderBy('links.click_count', 'desc').orderBy('links.id', 'asc');
    }
  }
}
