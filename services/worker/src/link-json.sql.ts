import type { EditableField, Link } from '@linkservice/contracts';
import { EDITABLE_FIELDS, LINK_FIELDS } from '@linkservice/contracts';

/**
 * What the SQL copy of toLink reads, each a piece of the caller's SQL (never data): a relation
 * of the statement holding a links row (a CTE's RETURNING, say), and expressions for the app's
 * subdomain key, the link domain (a parameter) and the instant `status` is judged at.
 */
export interface LinkJsonSource {
  row: string;
  subdomainKey: string;
  linkDomain: string;
  now: string;
}

type FieldSql = (source: LinkJsonSource) => string;

/** `YYYY-MM-DDThh:mm:ss.sssZ`, formatTimestamp's text (toISOString truncates, so does MS). */
const timestamp = (value: string) =>
  `to_char(${value} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * An editable field as its show() reads its column, by the column's type: text and jsonb as
 * stored, text[] as a JSON array, timestamptz (expiresAt) as formatExpiry's second-precision
 * text. A field whose fromColumn did more would read differently here: the tests run every
 * field's example through both copies (create-links.lone.integration.test.ts).
 */
const EDITABLE_SQL: Record<
  (typeof LINK_FIELDS)[EditableField]['sqlType'],
  (value: string) => string
> = {
  text: (value) => value,
  jsonb: (value) => value,
  'text[]': (value) => `to_jsonb(${value})`,
  timestamptz: (value) => `to_char(${value} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')`,
};

/**
 * The members the server sets, as toLink shows them (link-field-table.ts). `clickCount` is 0:
 * this copy reads a row straight from its INSERT, which no click can precede (toLink shows
 * `click_count ?? 0` for such a row). `status` is linkStatus: archived, else expired when
 * expires_at <= now, else active.
 */
const SHOWN_SQL: Record<Exclude<keyof Link, EditableField>, FieldSql> = {
  id: ({ row }) => `${row}.id`,
  alias: ({ row }) => `${row}.alias`,
  // linkUrlFor: https://<key>.<domain>/<alias>, https://<key>-test.<domain>/<alias> on test.
  url: ({ row, subdomainKey, linkDomain }) =>
    `'https://' || ${subdomainKey} || CASE ${row}.environment WHEN 'live' THEN '.' ELSE '-test.' END` +
    ` || ${linkDomain} || '/' || ${row}.alias`,
  environment: ({ row }) => `${row}.environment`,
  archivedAt: ({ row }) => timestamp(`${row}.archived_at`),
  createdAt: ({ row }) => timestamp(`${row}.created_at`),
  updatedAt: ({ row }) => timestamp(`${row}.updated_at`),
  clickCount: () => '0',
  status: ({ row, now }) =>
    `CASE WHEN ${row}.archived_at IS NOT NULL THEN 'archived'` +
    ` WHEN ${row}.expires_at <= ${now} THEN 'expired' ELSE 'active' END`,
};

const EDITABLE: ReadonlySet<string> = new Set(EDITABLE_FIELDS);

/** Every member of Link, in toLink's order (jsonb keeps its own; readers put it back). */
const LINK_JSON: readonly (readonly [string, FieldSql])[] = Object.keys(LINK_FIELDS).map(
  (name): readonly [string, FieldSql] => {
    if (!EDITABLE.has(name)) return [name, SHOWN_SQL[name as keyof typeof SHOWN_SQL]];
    const { column, sqlType } = LINK_FIELDS[name as EditableField];
    return [name, ({ row }) => EDITABLE_SQL[sqlType](`${row}.${column}`)];
  },
);

/**
 * The SQL copy of toLink: a jsonb object equal to toLink(row, context) of the links row in
 * `source.row`, for a statement that stores a link's answer in the statement that inserts it
 * (the lone creation, lone-creation.repository.ts). Member names are this module's constants.
 */
export function linkJsonSql(source: LinkJsonSource): string {
  const members = LINK_JSON.map(([name, value]) => `'${name}', ${value(source)}`);
  return `jsonb_build_object(${members.join(', ')})`;
}
