import { z } from 'zod';
import { linkSchema } from '@linkservice/contracts';
import { entryResultSchema, stoppedEarlySchema } from '@linkservice/creation';
import { ERROR_STATUS } from '../http/errors';
import type { ErrorSlug } from '../http/errors';

/**
 * The zod schemas of every answer body, for the API document (and, through it, the tests that
 * check each answer they receive). The request bodies come from the schemas that validate them:
 * contracts' linkCreateBodySchema / linkPatchBodySchema and the SDK's request schemas.
 */

export { linkSchema };

const environment = z.enum(['live', 'test']).meta({
  description: 'The environment of the key that made the request.',
});

export const appAnswerSchema = z
  .strictObject({
    app: z.strictObject({
      id: z.string().meta({ example: 'app_01JQ3Z6Y8N4T7K2M5P9R0S1V3W' }),
      name: z.string().meta({ example: 'Acme' }),
      subdomainKey: z.string().meta({
        description: 'Short key that forms the host of link URLs.',
        example: 'acme',
      }),
      linkHost: z.string().meta({
        description: 'Always the live host `<subdomainKey>.<link_domain>`, whatever the key.',
        example: 'acme.links.localhost',
      }),
    }),
    environment,
  })
  .meta({ id: 'AppAnswer', description: 'The app the key belongs to, and its environment.' });

export const linkAnswerSchema = z
  .strictObject({ link: linkSchema })
  .meta({ id: 'LinkAnswer', description: 'One link.' });

export const paginationSchema = z
  .strictObject({
    page: z.int().min(1).meta({ description: 'The page answered (1-based).', example: 1 }),
    perPage: z.int().min(1).max(200).meta({ description: 'Page size after capping.', example: 25 }),
    total: z.int().min(0).meta({ description: 'Links matching the filters.', example: 42 }),
    pageCount: z
      .int()
      .min(0)
      .meta({ description: 'ceil(total / perPage); 0 when total is 0.', example: 2 }),
  })
  .meta({ id: 'Pagination' });

export const linkListSchema = z
  .strictObject({ links: z.array(linkSchema), pagination: paginationSchema })
  .meta({
    id: 'LinkList',
    description: 'One page of links; a page past the end is `links: []` with true pagination.',
  });

export const archiveAnswerSchema = z
  .strictObject({
    link: linkSchema,
    note: z.string().meta({
      description:
        'Says the link was archived, keeps resolving to its fallback, and its alias stays taken.',
      example:
        'The link was archived. It keeps resolving to its fallback URL, and its alias stays taken: no new link can use it. Archiving cannot be undone.',
    }),
  })
  .meta({ id: 'ArchiveAnswer', description: 'The archived link (archivedAt set) and a note.' });

const fieldErrors = z.record(z.string(), z.string()).meta({
  description: 'Field name to a message for people; every failing field is named.',
  example: { webFallbackUrl: 'is required' },
});

/** The refused entry's error slugs come from the job's own result schema. */
const refusedEntry = entryResultSchema.options[1];

export const batchEntryResultSchema = z
  .discriminatedUnion('ok', [
    z.strictObject({
      index: z.int().min(0).meta({ description: 'Position of the entry in the request array.' }),
      ok: z.literal(true),
      link: linkSchema,
    }),
    z.strictObject({
      index: z.int().min(0).meta({ description: 'Position of the entry in the request array.' }),
      ok: z.literal(false),
      error: refusedEntry.shape.error.meta({
        description:
          '`validation_failed` (with fieldErrors), `rate_limited` or `plan_limit_reached` (the batch stopped at this entry).',
      }),
      message: z.string().meta({ description: 'For people.' }),
      fieldErrors: fieldErrors.optional(),
    }),
  ])
  .meta({ id: 'BatchEntryResult' });

export const batchReportSchema = z
  .strictObject({
    created: z.int().min(0),
    failed: z.int().min(0),
    notAttempted: z.int().min(0).meta({
      description: 'Entries never tried because the batch stopped early; not listed in results.',
    }),
    results: z.array(batchEntryResultSchema).meta({
      description: 'Every tried entry, sorted by index.',
    }),
    stoppedEarly: stoppedEarlySchema
      .meta({
        id: 'StoppedEarly',
        description:
          'Present when the creation limit or the plan allowance stopped the batch at `atIndex`; every later entry is notAttempted.',
      })
      .optional(),
  })
  .meta({
    id: 'BatchReport',
    description: '`created + failed + notAttempted` is the number of entries.',
  });

const ERROR_SLUGS = Object.keys(ERROR_STATUS) as [ErrorSlug, ...ErrorSlug[]];

/** Every failure's body, any slug: what an unknown path (404) or a wrong method (405) answers. */
export const errorBodySchema = z
  .strictObject({
    error: z.enum(ERROR_SLUGS).meta({ description: 'The slug clients branch on.' }),
    message: z.string().meta({ description: 'For people.' }),
    fields: fieldErrors.optional().meta({ description: 'Only with `invalid_request`.' }),
  })
  .meta({ id: 'Error', description: 'Every failure: `{error, message}`, plus `fields` on a 422.' });

/** The failure body of one slug, as a response of that slug's status shows it. */
export function errorBodyOf(
  slug: ErrorSlug,
  example: string,
  fields: 'with' | 'without' | 'maybe' = 'without',
) {
  const base = {
    error: z.literal(slug),
    message: z.string().meta({ description: 'For people.', example }),
  };
  switch (fields) {
    case 'with':
      return z.strictObject({ ...base, fields: fieldErrors });
    case 'maybe':
      return z.strictObject({ ...base, fields: fieldErrors.optional() });
    case 'without':
      return z.strictObject(base);
  }
}

const resolvedLink = z
  .strictObject({
    id: z.string().meta({ example: 'lnk_01JQ3Z6Y8N4T7K2M5P9R0S1V3W' }),
    alias: z.string().meta({ example: 'spring-sale' }),
    url: z.string().meta({ format: 'uri', example: 'https://acme.links.localhost/spring-sale' }),
    environment,
  })
  .meta({ id: 'ResolvedLink', description: 'The link a URL names, without its settings.' });

const deepLinkData = z
  .record(z.string(), z.unknown())
  .nullable()
  .meta({ description: "The link's deepLinkData, for the app.", example: { screen: 'product' } });

export const resolveAnswerSchema = z
  .strictObject({
    link: resolvedLink,
    deepLinkData,
    query: z.record(z.string(), z.string()).meta({
      description:
        "The opened URL's query parameters (string values; a name given more than once: its last value).",
      example: { utm_source: 'email' },
    }),
  })
  .meta({ id: 'ResolveAnswer' });

const isoMs = z.string().meta({ format: 'date-time', example: '2030-01-31T12:00:00.000Z' });

export const installReportedSchema = z
  .strictObject({
    install: z.strictObject({
      id: z.string().meta({ example: 'ins_01JQ3Z6Y8N4T7K2M5P9R0S1V3W' }),
      secret: z.string().meta({
        description: 'Shown once: erasing this install needs it (X-Install-Secret).',
      }),
    }),
    match: z.discriminatedUnion('type', [
      z.strictObject({
        type: z.literal('deterministic'),
        method: z.enum(['play_referrer', 'clipboard', 'opened_url']),
        clickedAt: isoMs
          .nullable()
          .meta({ description: "The click's time; null for an openedUrl match without a token." }),
      }),
      z.strictObject({ type: z.literal('none'), method: z.null(), clickedAt: z.null() }),
    ]),
    link: resolvedLink.nullable(),
    deepLinkData,
  })
  .meta({
    id: 'InstallReported',
    description: 'The install, and the link it matched (deterministically) or nulls.',
  });

export const installErasedSchema = z
  .strictObject({
    erased: z.strictObject({
      installId: z.string(),
      erasedAt: isoMs,
      records: z.int().min(0).meta({ description: 'Rows deleted.' }),
    }),
    receipt: z.string().meta({
      description:
        'Compact Ed25519 (EdDSA) JWS over `{installId, appId, environment, erasedAt, records}`, verifiable with the key at `GET /.well-known/jwks.json`.',
    }),
  })
  .meta({ id: 'InstallErased' });
