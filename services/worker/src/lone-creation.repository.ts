import type { EditableField, LinkDraft } from '@linkservice/contracts';
import {
  EDITABLE_FIELDS,
  insertColumnsOf,
  LINK_FIELDS,
  STORED_LINK_COLUMNS,
} from '@linkservice/contracts';
import type { CreateLinksResult } from '@linkservice/creation';
import { createLinksResultSchema, isLockTimeout } from '@linkservice/creation';
import type { Database, Environment } from '@linkservice/db';
import { constantStatement, executeStatement } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { linkJsonSql } from './link-json.sql';
import { LINK_CREATED_EVENTS } from './link-inserts.repository';

/** One link of a request that travels alone, as the lone statement writes it. */
export interface LoneLink {
  requestId: string;
  appId: string;
  environment: Environment;
  /** The request's deadline (epoch ms): the claim must come before it, by the database clock. */
  deadline: number;
  /** The entry's index in its request. */
  index: number;
  id: string;
  /** The caller's alias, or a generated one. */
  alias: string;
  draft: LinkDraft;
  /** The request's trace context, '' without one (the link.created event carries it). */
  traceparent: string;
  linkDomain: string;
  /** The longest the statement waits for any lock (see create). */
  lockTimeoutMs: number;
}

/**
 * What the lone statement did: `created`, committed with its outcome (the results exactly as
 * stored); or nothing at all, and the usual transaction decides the request (`reason` says why,
 * for the logs and the tests).
 */
export type LoneAttempt =
  | { kind: 'created'; result: CreateLinksResult; subdomainKey: string }
  | { kind: 'not_created'; reason: 'no_row' | 'already_decided' | 'lock_wait' };

/** The editable columns, in the order of their parameters ($8 on). */
const EDITABLE_COLUMNS = EDITABLE_FIELDS.map((field: EditableField) => LINK_FIELDS[field]);
const AFTER_COLUMNS = 8 + EDITABLE_COLUMNS.length;

/**
 * The statement, one constant text (planned once per connection where statements are named, see
 * constantStatement). Parameters: $1 app id, $2 deadline (epoch ms), $3 request id, $4
 * lock_timeout (ms, as text), $5 link id, $6 environment, $7 alias, $8... the editable columns,
 * then the trace context, the entry's index and the link domain.
 */
const LONE_CREATION = constantStatement<{ results: unknown; subdomain_key: string }>(`
  WITH app AS (
    SELECT apps.id, apps.subdomain_key, set_config('lock_timeout', $4, true) AS lock_timeout
    FROM apps
    WHERE apps.id = $1
      AND (apps.link_allowance IS NULL
           OR apps.live_link_count + apps.test_link_count < apps.link_allowance)
      AND clock_timestamp() < to_timestamp($2::float8 / 1000)
      AND NOT EXISTS (SELECT 1 FROM creation_requests WHERE id = $3)
    FOR NO KEY UPDATE OF apps SKIP LOCKED
  ), inserted AS (
    INSERT INTO links (id, app_id, environment, alias,
                       ${EDITABLE_COLUMNS.map(({ column }) => column).join(', ')})
    SELECT $5, app.id, $6, $7,
           ${EDITABLE_COLUMNS.map(({ sqlType }, i) => `$${8 + i}::${sqlType}`).join(', ')}
    FROM app
    ON CONFLICT (app_id, environment, alias) DO NOTHING
    RETURNING ${STORED_LINK_COLUMNS.join(', ')}
  ), traces AS (
    SELECT $5::text AS link_id, $${AFTER_COLUMNS}::text AS traceparent
  ),
  ${LINK_CREATED_EVENTS},
  claimed AS (
    INSERT INTO creation_requests (id, app_id, status, results)
    SELECT $3, inserted.app_id, 'done',
           jsonb_build_object('results', jsonb_build_array(jsonb_build_object(
             'index', $${AFTER_COLUMNS + 1}::int, 'ok', true, 'link', ${linkJsonSql({
               row: 'inserted',
               subdomainKey: 'app.subdomain_key',
               linkDomain: `$${AFTER_COLUMNS + 2}::text`,
               now: 'clock_timestamp()',
             })})))
    FROM inserted CROSS JOIN app
    RETURNING results
  )
  SELECT claimed.results, app.subdomain_key FROM claimed CROSS JOIN app`);

/**
 * A creation of one link in one statement, without a transaction block (see
 * @linkservice/creation's README, "A lone creation in one statement"). Its steps are the usual
 * transaction's, as data-modifying CTEs of one autocommit statement, which commits all of them
 * or none:
 *
 * - `app`: the app row, locked FOR NO KEY UPDATE as the claim locks it, SKIP LOCKED: a held
 *   lock means other creations of this app are under way, and the usual transaction queues
 *   behind them instead. Returned only while the allowance holds (the counts of the locked row's
 *   latest version: a row updated since the snapshot is re-read under the lock, as the claim's
 *   wait re-reads it), the database clock is before the deadline, and the request has no row.
 * - `inserted`: the link, ON CONFLICT on its alias DO NOTHING (a taken alias inserts nothing),
 *   and its link.created event in the outbox CTEs, as insertLinks writes them.
 * - `claimed`: the request's row, `done` with its results, built by linkJsonSql from the stored
 *   row. A plain INSERT: a row that exists (or commits while this one waits for it) raises a
 *   unique violation, which aborts the whole statement, link included. So a link never commits
 *   without its claim, and the results stored are exactly what this returns.
 * - the app's link counts follow by the statement trigger on links, as for every insert.
 *
 * Bounded without session state: `set_config('lock_timeout', …, true)` holds for this
 * statement's implicit transaction only, and Postgres reads lock_timeout at each lock wait, so
 * every wait after the `app` row (an insert of the same alias or request id by a transaction
 * still open, a foreign-key check) ends within `lockTimeoutMs` with SQLSTATE 55P03, rolling the
 * statement back. The app row itself is never waited for (SKIP LOCKED), and nothing else in the
 * statement waits. One parameterised statement of constant text: named (parsed and planned once
 * per connection) only where the pool names constant statements, unnamed behind a PgBouncer that
 * cannot keep them (DATABASE_NAMED_STATEMENTS=false), like the API key lookup.
 */
export class LoneCreations {
  constructor(private readonly db: Kysely<Database>) {}

  async create(link: LoneLink): Promise<LoneAttempt> {
    const lockMs = Math.max(1, Math.ceil(link.lockTimeoutMs));
    if (!Number.isSafeInteger(lockMs)) throw new RangeError(`lock timeout ${link.lockTimeoutMs}`);
    const columns: Record<string, unknown> = insertColumnsOf(link.draft);
    try {
      const rows = await executeStatement(this.db, LONE_CREATION, [
        link.appId,
        link.deadline,
        link.requestId,
        String(lockMs),
        link.id,
        link.environment,
        link.alias,
        ...EDITABLE_COLUMNS.map(({ column }) => columns[column] ?? null),
        link.traceparent,
        link.index,
        link.linkDomain,
      ]);
      const row = rows.at(0);
      if (!row) return { kind: 'not_created', reason: 'no_row' };
      return {
        kind: 'created',
        result: createLinksResultSchema.parse(row.results),
        subdomainKey: row.subdomain_key,
      };
    } catch (error) {
      if (isRequestRowConflict(error)) return { kind: 'not_created', reason: 'already_decided' };
      if (isLockTimeout(error)) return { kind: 'not_created', reason: 'lock_wait' };
      throw error;
    }
  }
}

/** A unique violation on creation_requests' key: the request was decided meanwhile. */
function isRequestRowConflict(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, constraint } = error as { code?: unknown; constraint?: unknown };
  return code === '23505' && constraint === 'creation_requests_pkey';
}
