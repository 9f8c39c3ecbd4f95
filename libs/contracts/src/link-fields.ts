import { z } from 'zod';
import type { LinkRow, LinkUpdate, NewLink } from '@linkservice/db';
import type { LinkContext, StoredLink } from './link';
import { formatExpiry, formatTimestamp, linkStatus } from './link';
import { linkUrlFor } from './link-url';
import type { FieldRule } from './link-input-fields';
import {
  deepLinkDataRule,
  expiresAtRule,
  FIELD_INPUTS,
  iosFallbackUrlRule,
  LIMITS,
  tagsRule,
  textRule,
  webFallbackUrlRule,
} from './link-input-fields';

/** title, campaign, channel and feature: free text, null when left out. */
const TEXT = {
  sqlType: 'text',
  rule: textRule,
  draft: z.string().nullable(),
  whenOmitted: { value: null },
  toColumn: (value: string | null) => value,
  fromColumn: (value: string | null) => value,
} satisfies Omit<
  EditableSpec<'title', string | null, string | null>,
  'column' | 'example' | 'input' | 'schema'
>;

/** The shown value of a text field: what its input takes, as stored. */
function textSchema(description: string, example: string) {
  return z.string().nullable().meta({ description, example });
}

const TIMESTAMP_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function timestampSchema(description: string) {
  return z
    .string()
    .regex(TIMESTAMP_MS)
    .meta({
      description: `${description} \`YYYY-MM-DDThh:mm:ss.sssZ\` (UTC, milliseconds).`,
      format: 'date-time',
      example: '2030-01-31T12:00:00.000Z',
    });
}

/**
 * Every member of the Link resource, in the order responses print them, and where it comes
 * from. This table is the one definition of a link's fields: the Link type, toLink, the creation
 * job's draft (schema and defaults), the fields PATCH may change and their rules, and the column
 * values the worker inserts and the gateway updates are all derived from it.
 *
 * - `shown`: set by the server; a caller sending it gets a 422 naming it.
 * - `alias`: sent on create only (null or left out: the worker generates one).
 * - `editable`: sent on create and PATCH, checked by `rule`, stored in `column`.
 *
 * Adding a field: an entry here (its rule in link-input-fields.ts unless an existing one fits),
 * the column in libs/db's schema.ts, and a migration listed in libs/db's migrations/index.ts.
 * The contract tests that spell out a whole Link or draft then fail until they name it too.
 */
export const LINK_FIELDS = {
  id: shown(
    (row) => row.id,
    z
      .string()
      .meta({ description: 'The link id (opaque).', example: 'lnk_01JQ3Z6Y8N4T7K2M5P9R0S1V3W' }),
  ),
  alias: {
    kind: 'alias',
    /** null: the worker generates one. */
    draft: z.string().min(1).max(LIMITS.aliasLength).nullable(),
    input: FIELD_INPUTS.alias,
    schema: z.string().meta({
      description: 'Unique within the app and environment; cannot change after creation.',
      example: 'spring-sale',
    }),
    show: (row: StoredLink): string => row.alias,
  },
  url: shown(
    (row, { subdomainKey, linkDomain }) =>
      linkUrlFor(subdomainKey, row.environment, row.alias, linkDomain),
    z.string().meta({
      description:
        'The public address: `https://<subdomainKey>.<link_domain>/<alias>`, `<subdomainKey>-test.<link_domain>` in the test environment.',
      format: 'uri',
      example: 'https://acme.links.localhost/spring-sale',
    }),
  ),
  environment: shown(
    (row) => row.environment,
    z.enum(['live', 'test']).meta({ description: "The key's environment." }),
  ),
  webFallbackUrl: editable({
    column: 'web_fallback_url',
    sqlType: 'text',
    rule: webFallbackUrlRule,
    draft: z.string(),
    whenOmitted: 'required',
    toColumn: (value) => value,
    fromColumn: (value) => value,
    example: 'https://example.com/web',
    input: FIELD_INPUTS.webFallbackUrl,
    schema: z.string().meta({
      description: 'Where a person without the app ends up.',
      format: 'iri',
      example: 'https://example.com/spring-sale',
    }),
  }),
  iosFallbackUrl: editable({
    column: 'ios_fallback_url',
    sqlType: 'text',
    rule: iosFallbackUrlRule,
    draft: z.string().nullable(),
    whenOmitted: { value: null },
    toColumn: (value) => value,
    fromColumn: (value) => value,
    example: 'https://example.com/ios',
    input: FIELD_INPUTS.iosFallbackUrl,
    schema: z.string().nullable().meta({
      description: 'Used instead of webFallbackUrl on iOS; null when unset.',
      example: 'https://apps.apple.com/app/id1234567890',
    }),
  }),
  deepLinkData: editable({
    column: 'deep_link_data',
    sqlType: 'jsonb',
    rule: deepLinkDataRule,
    // Checked, not rebuilt: z.record() copies members into a fresh `{}` and drops one named
    // `__proto__` on purpose, which here is a caller's data lost between gateway and worker.
    draft: z
      .custom<Record<string, unknown>>(
        (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
        { error: 'must be a JSON object or null' },
      )
      .nullable(),
    whenOmitted: { value: null },
    // An explicit string: pg would send an object as JSON anyway, but would take an array for
    // a Postgres array literal.
    toColumn: (value) => (value === null ? null : JSON.stringify(value)),
    fromColumn: (value) => value,
    // Not in jsonb's key order (shorter keys first), so an answer that skipped the database
    // would read differently from a later GET.
    example: { screen: 'product', nested: { ids: [1, 2.5, null], ok: true } },
    input: FIELD_INPUTS.deepLinkData,
    schema: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({
        description: 'Handed to the app when the link opens it; null when unset.',
        example: { screen: 'product', productId: '42' },
      }),
  }),
  title: editable({
    column: 'title',
    ...TEXT,
    example: 'Title',
    input: FIELD_INPUTS.title,
    schema: textSchema('Title; null when unset.', 'Spring sale'),
  }),
  campaign: editable({
    column: 'campaign',
    ...TEXT,
    example: 'Campaign',
    input: FIELD_INPUTS.campaign,
    schema: textSchema('Campaign; null when unset.', 'spring-2030'),
  }),
  channel: editable({
    column: 'channel',
    ...TEXT,
    example: 'Channel',
    input: FIELD_INPUTS.channel,
    schema: textSchema('Channel; null when unset.', 'email'),
  }),
  feature: editable({
    column: 'feature',
    ...TEXT,
    example: 'Feature',
    input: FIELD_INPUTS.feature,
    schema: textSchema('Feature; null when unset.', 'sharing'),
  }),
  tags: editable({
    column: 'tags',
    sqlType: 'text[]',
    rule: tagsRule,
    draft: z.array(z.string()),
    whenOmitted: { value: [] },
    toColumn: (value) => value,
    fromColumn: (value) => value,
    example: ['x', 'y'],
    input: FIELD_INPUTS.tags,
    schema: z
      .array(z.string())
      .meta({ description: 'At most 25 tags; empty when none.', example: ['spring', 'email'] }),
  }),
  expiresAt: editable({
    column: 'expires_at',
    sqlType: 'timestamptz',
    rule: expiresAtRule,
    /** ISO 8601 UTC at second precision, e.g. 2027-01-01T00:00:00Z. */
    draft: z.string().nullable(),
    whenOmitted: { value: null },
    toColumn: (value) => value,
    fromColumn: (value) => (value ? formatExpiry(value) : null),
    example: '2031-02-03T04:05:06Z',
    input: FIELD_INPUTS.expiresAt,
    schema: z.string().nullable().meta({
      description: '`YYYY-MM-DDThh:mm:ssZ` (second precision); null when the link does not expire.',
      example: '2030-01-31T12:00:00Z',
    }),
  }),
  archivedAt: shown(
    (row) => (row.archived_at ? formatTimestamp(row.archived_at) : null),
    timestampSchema('When the link was archived; null while it is not.').nullable(),
  ),
  createdAt: shown((row) => formatTimestamp(row.created_at), timestampSchema('Creation time,')),
  updatedAt: shown(
    (row) => formatTimestamp(row.updated_at),
    timestampSchema('Last change (moves only when a PATCH changed something),'),
  ),
  clickCount: shown(
    (row) => row.click_count ?? 0,
    z.int().min(0).meta({
      description:
        'Redirects the link host counted (HEAD counts nothing); reflects a click within 5 s.',
      example: 42,
    }),
  ),
  status: shown(
    (row, { now }) => linkStatus(row, now),
    z.enum(['active', 'archived', 'expired']).meta({
      description:
        '`archived` when archivedAt is set; else `expired` when expiresAt is past; else `active`.',
    }),
  ),
} as const;

/**
 * Where each column no editable field stores gets its value. With the columns of the editable
 * entries these are every column of a link: a new column that is in neither does not compile.
 */
const COLUMNS_NOT_INPUT = {
  id: 'the worker draws it',
  app_id: 'the job names the app',
  environment: 'the job names it',
  alias: 'the draft or the worker',
  archived_at: 'set by archiving',
  created_at: 'the database clock',
  updated_at: 'the database clock',
  search_text: 'generated by the database',
} as const satisfies Record<Exclude<keyof LinkRow, EditableColumn>, string>;

type LinkFields = typeof LINK_FIELDS;

/** The Link resource exactly as every API response shows it. */
export type Link = { -readonly [K in keyof LinkFields]: ReturnType<LinkFields[K]['show']> };

/** The fields PATCH may change; create takes these plus alias. */
export type EditableField = {
  [K in keyof LinkFields]: LinkFields[K] extends { kind: 'editable' } ? K : never;
}[keyof LinkFields];

type EditableEntry<K extends EditableField> = LinkFields[K];
type EditableValue<K extends EditableField> = z.infer<EditableEntry<K>['draft']>;
type EditableColumn = EditableEntry<EditableField>['column'];

/**
 * A link to create, after the gateway validated and normalised the caller's input: tags deduped
 * and capped, expiresAt truncated to the second, omitted fields as their `whenOmitted` value.
 * This is what travels in creation jobs; the worker re-parses it with this same schema.
 */
export type LinkDraft = { alias: string | null } & { [K in EditableField]: EditableValue<K> };

/** What a PATCH changes: only the fields it sent, normalised. */
export type LinkChanges = Partial<Pick<LinkDraft, EditableField>>;

export const EDITABLE_FIELDS: readonly EditableField[] = keysOfKind('editable');

export const EDITABLE_FIELD_RULES = mapEditable<{
  readonly [K in EditableField]: FieldRule<LinkDraft[K]>;
}>((field) => LINK_FIELDS[field].rule);

/** Link members the server sets; sending one is a 422 of its own. */
export const SERVER_SET_FIELDS: ReadonlySet<string> = new Set(keysOfKind('shown'));

const EDITABLE: ReadonlySet<string> = new Set(EDITABLE_FIELDS);

export function isEditableField(key: string): key is EditableField {
  return EDITABLE.has(key);
}

export const linkDraftSchema = z.object({
  alias: LINK_FIELDS.alias.draft,
  ...mapEditable<{ [K in EditableField]: EditableEntry<K>['draft'] }>(
    (field) => LINK_FIELDS[field].draft,
  ),
});

/** A required field has no value to stand in for it when create leaves it out. */
export type RequiredField = {
  [K in EditableField]: EditableEntry<K> extends { whenOmitted: 'required' } ? K : never;
}[EditableField];

/**
 * What create stores for each optional field the caller leaves out. Every draft spreads these,
 * so they are frozen, arrays included: a draft that changed its `tags` in place would otherwise
 * change every later draft's default.
 */
export const LINK_DRAFT_DEFAULTS: Readonly<Omit<LinkDraft, RequiredField>> = deepFreezeValues({
  alias: null,
  ...(Object.fromEntries(
    EDITABLE_FIELDS.flatMap((field): [EditableField, unknown][] => {
      const omitted: Omission<unknown> = LINK_FIELDS[field].whenOmitted;
      return omitted === 'required' ? [] : [[field, omitted.value]];
    }),
  ) as Omit<LinkDraft, RequiredField | 'alias'>),
});

function deepFreezeValues<T extends object>(record: T): Readonly<T> {
  for (const value of Object.values(record)) {
    if (typeof value === 'object' && value !== null) Object.freeze(value);
  }
  return Object.freeze(record);
}

export const REQUIRED_FIELDS: readonly RequiredField[] = EDITABLE_FIELDS.filter(
  (field): field is RequiredField => LINK_FIELDS[field].whenOmitted === 'required',
);

/**
 * A valid, normalised value of every editable field, none of them its default: tests walk the
 * table with it (create with all, PATCH each alone) so that each derivation meets every field.
 */
export const LINK_FIELD_EXAMPLES = mapEditable<{ [K in EditableField]: LinkDraft[K] }>(
  (field) => LINK_FIELDS[field].example,
);

/** Every column of links, for statements that name them (never from a request). */
export const LINK_COLUMNS: readonly (keyof LinkRow)[] = [
  ...(Object.keys(COLUMNS_NOT_INPUT) as (keyof typeof COLUMNS_NOT_INPUT)[]),
  ...EDITABLE_FIELDS.map((field) => LINK_FIELDS[field].column),
];

/** The columns of links toLink reads: all but search_text, the database's own. */
export const STORED_LINK_COLUMNS: readonly StoredLinkColumn[] = LINK_COLUMNS.filter(
  (column): column is StoredLinkColumn => column !== 'search_text',
);

type StoredLinkColumn = Exclude<keyof LinkRow, 'search_text'>;

/** One link as every response shows it, from its stored row. */
export function toLink(row: StoredLink, context: LinkContext): Link {
  const link: Record<string, unknown> = {};
  for (const [name, show] of SHOWN) link[name] = show(row, context);
  // Each entry's show() yields its own member's type: the loop cannot say so, Link's mapped
  // type does.
  return link as Link;
}

const SHOWN: readonly (readonly [string, (row: StoredLink, context: LinkContext) => unknown])[] =
  Object.entries(LINK_FIELDS).map(([name, entry]) => [name, entry.show] as const);

const LINK_MEMBERS = Object.keys(LINK_FIELDS) as (keyof Link)[];

/**
 * A Link read back from JSON that reordered its keys (jsonb stores shorter keys first), with its
 * members in the order toLink writes them, so every answer prints a link alike.
 */
export function inLinkOrder(link: Link): Link {
  const ordered: Partial<Record<keyof Link, unknown>> = {};
  for (const member of LINK_MEMBERS) {
    if (Object.hasOwn(link, member)) ordered[member] = link[member];
  }
  return ordered as Link;
}

/** Column values of the draft's editable fields, as the worker's INSERT sends them. */
export function insertColumnsOf(draft: LinkDraft): Pick<NewLink, EditableColumn> {
  const columns: Partial<Record<EditableColumn, unknown>> = {};
  for (const field of EDITABLE_FIELDS) {
    columns[LINK_FIELDS[field].column] = toColumn(field, draft[field]);
  }
  return columns as Pick<NewLink, EditableColumn>;
}

/** One column a PATCH sets: its value as a parameter, and the type to cast the parameter to. */
export interface ColumnChange {
  column: EditableColumn & keyof LinkUpdate;
  value: unknown;
  sqlType: EditableEntry<EditableField>['sqlType'];
}

/** Every column the changes set, in table order; none for `{}`. */
export function columnChangesOf(changes: LinkChanges): ColumnChange[] {
  return EDITABLE_FIELDS.flatMap((field) => {
    const value = changes[field];
    if (value === undefined) return [];
    const { column, sqlType } = LINK_FIELDS[field];
    return [{ column, sqlType, value: toColumn(field, value) }];
  });
}

function toColumn<K extends EditableField>(field: K, value: LinkDraft[K]): unknown {
  // The entry of `field` takes the value of `field`; TS cannot correlate the two through the
  // union of entries, so the entry is read as taking that value.
  const entry = LINK_FIELDS[field] as { toColumn: (value: LinkDraft[K]) => unknown };
  return entry.toColumn(value);
}

type Column = keyof StoredLink;
/** The value a column takes in INSERT and UPDATE (NewLink marks nullable columns optional). */
type ColumnInput<C extends Column> = Exclude<NewLink[C & keyof NewLink], undefined>;

/** What create stores when the caller leaves the field out, or 'required'. */
type Omission<V> = { value: V } | 'required';

interface EditableSpec<C extends Column, V, T, O extends Omission<V> = Omission<V>> {
  column: C;
  /** The Postgres type PATCH casts the parameter to (its columns are set in one statement). */
  sqlType: 'text' | 'jsonb' | 'text[]' | 'timestamptz';
  /** Checks what a caller sent and normalises it, on create and PATCH alike. */
  rule: FieldRule<V>;
  /** The normalised value as it travels in a creation job, re-checked by the worker. */
  draft: z.ZodType<V>;
  whenOmitted: O;
  toColumn: (value: V) => ColumnInput<C>;
  fromColumn: (value: StoredLink[C]) => T;
  /**
   * A valid value a caller may send, different from whenOmitted, and normalised already.
   * Tests walk the table with it: create and PATCH each field and read it back.
   */
  example: V;
  /** What a caller may send (create and PATCH): the zod schema its `rule` starts from. */
  input: z.ZodType;
  /** The member as responses show it, with its description for the API document. */
  schema: z.ZodType<T>;
}

function editable<C extends Column, V, T, O extends Omission<V>>(spec: EditableSpec<C, V, T, O>) {
  return {
    kind: 'editable' as const,
    ...spec,
    show: (row: StoredLink): T => spec.fromColumn(row[spec.column]),
  };
}

function shown<T>(show: (row: StoredLink, context: LinkContext) => T, schema: z.ZodType<T>) {
  return { kind: 'shown' as const, show, schema };
}

function keysOfKind<Kind extends LinkFields[keyof LinkFields]['kind']>(kind: Kind) {
  return (Object.keys(LINK_FIELDS) as (keyof LinkFields)[]).filter(
    (key) => LINK_FIELDS[key].kind === kind,
  ) as Extract<
    { [K in keyof LinkFields]: LinkFields[K] extends { kind: Kind } ? K : never }[keyof LinkFields],
    string
  >[];
}

function mapEditable<R extends { [K in EditableField]: unknown }>(
  value: (field: EditableField) => R[EditableField],
): R {
  return Object.fromEntries(EDITABLE_FIELDS.map((field) => [field, value(field)])) as R;
}

/**
 * The Link resource as every answer shows it, for the API document and the tests that check
 * answers against it: one member per entry of LINK_FIELDS, in its order.
 */
export const linkSchema = z
  .strictObject(
    Object.fromEntries(
      Object.entries(LINK_FIELDS).map(([name, entry]) => [name, entry.schema]),
    ) as {
      [K in keyof LinkFields]: LinkFields[K]['schema'];
    },
  )
  .meta({
    id: 'Link',
    description: 'A deep link, as every answer shows it (single, list, batch, archive).',
  });

/**
 * The body of POST /links (and of each batch entry): alias plus every editable field's input
 * schema. Unknown and server-set members are refused (422 naming them).
 */
export const linkCreateBodySchema = z
  .strictObject({
    alias: LINK_FIELDS.alias.input.nullable().optional(),
    ...mapEditable<{
      [K in EditableField]: z.ZodOptional<EditableEntry<K>['input']> | EditableEntry<K>['input'];
    }>((field) =>
      LINK_FIELDS[field].whenOmitted === 'required'
        ? LINK_FIELDS[field].input
        : LINK_FIELDS[field].input.optional(),
    ),
  })
  .meta({
    id: 'LinkCreate',
    description:
      'A link to create. Only webFallbackUrl is required; unknown and server-set members are a 422 naming them.',
  });

/** The body of PATCH /links/{linkId}: only the fields to change. */
export const linkPatchBodySchema = z
  .strictObject({
    alias: LINK_FIELDS.alias.input.optional(),
    ...mapEditable<{ [K in EditableField]: z.ZodOptional<EditableEntry<K>['input']> }>((field) =>
      LINK_FIELDS[field].input.optional(),
    ),
  })
  .meta({
    id: 'LinkPatch',
    description:
      'The fields to change; others remain. `{}` changes nothing. `alias` is accepted only equal to the current one; webFallbackUrl cannot be null.',
  });
