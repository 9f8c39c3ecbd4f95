import type { EditableField, Link } from '@linkservice/contracts';
import { EDITABLE_FIELDS, LINK_FIELDS } from '@linkservice/contracts';
import type { RawBuilder } from 'kysely';
import { sql } from 'kysely';

/**
 * What the SQL copy of toLink reads: a relation of the statement holding a links row (a CTE's
 * RETURNING, say), the app's subdomain key, the link domain, and the instant `status` is judged
 * at. The relation's name is the caller's SQL, never data.
 */
export interface LinkJsonSource {
  row: string;
  subdomainKey: RawBuilder<string>;
  linkDomain: string;
  now: RawBuilder<Date>;
}

type FieldSql = (source: LinkJsonSource) => RawBuilder<unknown>;

const column = (source: LinkJsonSource, name: string) => sql.ref(`${source.row}.${name}`);

/** `YYYY-MM-DDThh:mm:ss.sssZ`, formatTimestamp's text (toISOString truncates, so does MS). */
const timestamp = (value: RawBuilder<unknown>) =>
  sql`to_char(${value} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * An editable field as its show() reads its column, by the column's type: text and jsonb as
 * stored, text[] as a JSON array, timestamptz (expiresAt) as formatExpiry's second-precision
 * text. A field whose fromColumn did more would read differently here: the tests run every
 * field's example through both copies (link-json.sql.integration.test.ts).
 */
const EDITABLE_SQL: Record<
  (typeof LINK_FIELDS)[EditableField]['sqlType'],
  (value: RawBuilder<unknown>) => RawBuilder<unknown>
> = {
  text: (value) => value,
  jsonb: (value) => value,
  'text[]': (value) => sql`to_jsonb(${value})`,
  timestamptz: (value) => sql`to_char(${value} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`,
};

/**
 * The members the server sets, as toLink shows them (link-field-table.ts). `clickCount` is 0:
 * this copy reads a row straight from its INSERT, which no click can precede (toLink shows
 * `click_count ?? 0` for such a row). `status` is linkStatus: archived, else expired when
 * expires_at <= now, else active.
 */
const SHOWN_SQL: Record<Exclude<keyof Link, EditableField>, FieldSql> = {
  id: (source) => column(source, 'id'),
  alias: (source) => column(source, 'alias'),
  // linkUrlFor: https://<key>.<domain>/<alias>, https://<key>-test.<domain>/<alias> on test.
  url: (source) =>
    sql`'https://' || ${source.subdomainKey}
        || CASE ${column(source, 'environment')} WHEN 'live' THEN '.' ELSE '-test.' END
        || ${source.linkDomain}::text || '/' || ${column(source, 'alias')}`,
  environment: (source) => column(source, 'environment'),
  archivedAt: (source) => timestamp(column(source, 'archived_at')),
  createdAt: (source) => timestamp(column(source, 'created_at')),
  updatedAt: (source) => timestamp(column(source, 'updated_at')),
  clickCount: () => sql`0`,
  status: (source) =>
    sql`CASE WHEN ${column(source, 'archived_at')} IS NOT NULL THEN 'archived'
             WHEN ${column(source, 'expires_at')} <= ${source.now} THEN 'expired'
             ELSE 'active' END`,
};

/** Every member of Link, in toLink's order (jsonb keeps its own order; readers put it back). */
const EDITABLE: ReadonlySet<string> = new Set(EDITABLE_FIELDS);
const LINK_JSON: readonly (readonly [string, FieldSql])[] = Object.keys(LINK_FIELDS).map(
  (name): readonly [string, FieldSql] => {
    if (!EDITABLE.has(name)) return [name, SHOWN_SQL[name as keyof typeof SHOWN_SQL]];
    const { column: stored, sqlType } = LINK_FIELDS[name as EditableField];
    return [name, (source) => EDITABLE_SQL[sqlType](column(source, stored))];
  },
);

/**
 * The SQL copy of toLink: a jsonb object equal to toLink(row, context) of the links row in
 * `source.row`, for statements that must store a link's answer in the same statement that
 * inserts it (the lone creation, lone-creation.repository.ts). Member names are this module's
 * constants, inlined as literals; every value is a column or a parameter.
 */
export function linkJsonOf(source: LinkJsonSource): RawBuilder<Link> {
  const members = LINK_JSON.map(([name, value]) => sql`${sql.lit(name)}::text, ${value(source)}`);
  return sql<Link>`jsonb_build_object(${sql.join(members)})`;
}
