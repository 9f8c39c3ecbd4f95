import { z } from 'zod';
import type { StoredLink } from './link';
import { formatExpiry, formatTimestamp, LINK_STATUSES, linkStatus } from './link';
import type { EditableSpec } from './link-field-spec';
import { editable, shown } from './link-field-spec';
import {
  aliasSyntax,
  DATE_TIME_WITH_ZONE,
  deepLinkDataRule,
  expiresAtRule,
  iosFallbackUrlRule,
  LIMITS,
  MESSAGES,
  tagSchema,
  tagsRule,
  textInput,
  textRule,
  URL_FORMAT,
  urlSyntax,
  webFallbackUrlRule,
} from './link-input-rules';
import { linkUrlFor } from './link-url';

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

/** What one of the text fields accepts, in its own words for the API document. */
function textInputOf(description: string, example: string) {
  return textInput.meta({
    description: `${description} At most ${LIMITS.textLength} characters; null clears it.`,
    example,
  });
}

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
 * An entry says all of a field: its output (`show`, `schema`) and, when callers send it, its
 * input (`input` for the document, `rule` for the check), its draft and its column.
 * Adding a field: an entry here (its rule in link-input-rules.ts unless an existing one fits),
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
    input: aliasSyntax.meta({
      description:
        'Letters, digits, `-` and `_`, starting with a letter or digit, at most 128 characters; unique within the app and environment; reserved words are refused. Generated (7+ characters) when omitted or null. Cannot be changed after creation (PATCH accepts only the current value).',
      maxLength: LIMITS.aliasLength,
      example: 'spring-sale',
    }),
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
    input: urlSyntax(MESSAGES.webFallbackUrl).meta({
      description:
        'Absolute http or https URL with a host, at most 2,048 characters: where a person without the app ends up (Android uses it). Required on create; cannot be null.',
      ...URL_FORMAT,
      example: 'https://example.com/spring-sale',
    }),
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
    input: urlSyntax(MESSAGES.iosFallbackUrl)
      .meta({
        description:
          'Absolute http or https URL used instead of webFallbackUrl on iOS (e.g. the App Store listing); null when unset.',
        ...URL_FORMAT,
        example: 'https://apps.apple.com/app/id1234567890',
      })
      .nullable(),
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
    // A JSON object's members are anything JSON holds; the limit is on its serialised length,
    // which JSON Schema cannot state, so the description does.
    input: z
      .record(z.string(), z.unknown())
      .meta({
        description: `JSON object handed to the app when the link opens it (an array, string or number is refused); at most ${LIMITS.deepLinkDataLength} characters as JSON.stringify writes it; null clears it. The request body nests objects and arrays at most ${LIMITS.bodyDepth} levels deep, the body itself being level 1 (so at most ${LIMITS.bodyDepth - 3} inside deepLinkData of a batch entry); a deeper body is a 400 \`invalid_body\`.`,
        example: { screen: 'product', productId: '42' },
      })
      .nullable(),
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
    input: textInputOf('Free text, e.g. for a dashboard.', 'Spring sale'),
    schema: textSchema('Title; null when unset.', 'Spring sale'),
  }),
  campaign: editable({
    column: 'campaign',
    ...TEXT,
    example: 'Campaign',
    input: textInputOf('Campaign name for analytics.', 'spring-2030'),
    schema: textSchema('Campaign; null when unset.', 'spring-2030'),
  }),
  channel: editable({
    column: 'channel',
    ...TEXT,
    example: 'Channel',
    input: textInputOf('Channel name for analytics.', 'email'),
    schema: textSchema('Channel; null when unset.', 'email'),
  }),
  feature: editable({
    column: 'feature',
    ...TEXT,
    example: 'Feature',
    input: textInputOf('Feature name for analytics.', 'sharing'),
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
    // No maxItems: tags past the 25th are dropped silently, not refused (the spec), so a longer
    // list is valid input.
    input: z.array(tagSchema).meta({
      description:
        'Strings of 1-60 characters. Duplicates are dropped (first kept), then tags past the 25th are dropped silently; replaces the whole list on PATCH.',
      example: ['spring', 'email'],
    }),
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
    // The rule's own pattern, not JSON Schema's `date-time`: RFC 3339 would refuse the basic,
    // week and ordinal forms the rule takes, and take a space for the T, which the rule refuses.
    input: z
      .string()
      .meta({
        description:
          'ISO 8601 timestamp with a zone (Z or ±hh:mm; calendar, week or ordinal date, basic or extended format), in the future; stored at second precision and returned as `YYYY-MM-DDThh:mm:ssZ`. null clears it.',
        pattern: DATE_TIME_WITH_ZONE.source,
        example: '2030-01-31T12:00:00Z',
      })
      .nullable(),
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
    z.enum(LINK_STATUSES).meta({
      description:
        '`archived` when archivedAt is set; else `expired` when expiresAt is past; else `active`.',
    }),
  ),
} as const;
