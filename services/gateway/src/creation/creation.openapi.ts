import { z } from 'zod';
import type { ZodOpenApiOperationObject, ZodOpenApiResponseObject } from 'zod-openapi';
import { linkCreateBodySchema } from '@linkservice/contracts';
import { errorAnswer, HEADERS, jsonAnswer, rateLimitHeaders } from '../openapi/responses';
import { batchReportSchema, linkAnswerSchema } from '../openapi/schemas';
import { MAX_BATCH_ENTRIES } from './batch-request';

/** The plan of issue 14, implemented in idempotency-key.routes.ts and documented in docs/decisions.md. */
const idempotencyHeader = z.object({
  'Idempotency-Key': z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x20-\x7E]+$/)
    .optional()
    .meta({
      description:
        'Makes a retry safe: 1-255 printable ASCII characters (leading and trailing spaces are not part of the key: HTTP drops them), scoped to the app and environment, kept 24 h. The same key with the same body replays the first answer (status, body, RateLimit-* and Retry-After, plus `Idempotent-Replayed: true`) without using a creation unit; with a different body it is a 422 naming `Idempotency-Key` (with RateLimit-*, as every creation 422). While the first request with the key is still running, the next waits for it; past the creation timeout it is a 409. 503, 429 and 500 answers are not kept, so a retry can succeed. Without the header nothing changes.',
      example: '5f1c2a9e-order-1234',
    }),
});

/** Creation answers: RateLimit-*, and Idempotent-Replayed when replayed. */
function creationHeaders(required: boolean) {
  return {
    ...rateLimitHeaders(required),
    'Idempotent-Replayed': HEADERS.idempotentReplayed.optional(),
  };
}

const rateLimited = errorAnswer(
  'rate_limited',
  'the creation limit of the app (per hour, live and test together) is used up; nothing was created. Not kept under an Idempotency-Key.',
  'This app has used its 300 link creations for this hour; retry in 1200 seconds.',
  { headers: { ...rateLimitHeaders(true), 'Retry-After': HEADERS.retryAfter } },
);

const inProgress = errorAnswer(
  'conflict',
  'a request with this Idempotency-Key is still in progress and did not finish within the creation timeout.',
  'A request with this Idempotency-Key is still in progress; retry later.',
  { headers: { 'Retry-After': HEADERS.retryAfter } },
);

const unavailable = errorAnswer(
  'unavailable',
  'Postgres, Redis or the workers did not answer in time; nothing was created (or the link is visible under its alias). Not kept under an Idempotency-Key.',
  'Link creation is temporarily unavailable and nothing was created; retry shortly.',
  // RateLimit-* when the limiter answered before the creation gave up.
  { headers: { ...rateLimitHeaders(false), 'Retry-After': HEADERS.retryAfter } },
);

function invalid(
  description: string,
  example: string,
  fields: 'with' | 'maybe',
): ZodOpenApiResponseObject {
  return errorAnswer('invalid_request', description, example, {
    fields,
    headers: creationHeaders(true),
  });
}

export const createLinkDoc: ZodOpenApiOperationObject = {
  operationId: 'createLink',
  summary: 'Create a link',
  description:
    'Creates one link in the app and environment of the key. Only webFallbackUrl is required; the alias is generated when omitted or null. Uses one unit of the creation limit.',
  tags: ['Links'],
  requestParams: { header: idempotencyHeader },
  requestBody: {
    required: true,
    content: { 'application/json': { schema: linkCreateBodySchema } },
  },
  responses: {
    '201': jsonAnswer('The link was created.', linkAnswerSchema, creationHeaders(true)),
    '409': inProgress,
    '422': invalid(
      'with `fields` when a field is invalid (an alias already in use, also by an archived link, included; or an unusable Idempotency-Key, or one used with another request in the last 24 hours); without `fields`, with a message about the plan, when the plan link allowance is reached.',
      'Some fields are invalid.',
      'maybe',
    ),
    '429': rateLimited,
    '503': unavailable,
  },
};

export const createLinkBatchDoc: ZodOpenApiOperationObject = {
  operationId: 'createLinkBatch',
  summary: 'Create up to 100 links',
  description:
    'Tries the entries in order; one bad entry does not reject the others. When the creation limit or the plan allowance runs out part way, the entry that hit it is refused and the batch stops there: later entries are counted in notAttempted, and links already created persist. Without an Idempotency-Key, resending is safe only for entries with caller-chosen aliases.',
  tags: ['Links'],
  requestParams: { header: idempotencyHeader },
  requestBody: {
    required: true,
    content: {
      'application/json': {
        schema: z
          .strictObject({
            links: z
              .array(linkCreateBodySchema)
              .min(1)
              .max(MAX_BATCH_ENTRIES)
              .meta({
                description: `1 to ${MAX_BATCH_ENTRIES} entries, each taking exactly the fields of POST /links.`,
              }),
          })
          .meta({ id: 'LinkBatchCreate' }),
      },
    },
  },
  responses: {
    '201': jsonAnswer('Every entry was created.', batchReportSchema, creationHeaders(true)),
    '207': jsonAnswer(
      'Not every entry was created (even when none was); `results` tells which, by index. With `stoppedEarly.reason` `rate_limited` the answer carries Retry-After.',
      batchReportSchema,
      { ...creationHeaders(true), 'Retry-After': HEADERS.retryAfter.optional() },
    ),
    '409': inProgress,
    '422': invalid(
      'the request itself is wrong (`links` missing, not an array, empty, more than 100 entries, an element that is not an object, another top-level member; or an unusable or reused Idempotency-Key): `fields` names it; nothing was created.',
      'The batch request is invalid; nothing was created.',
      'with',
    ),
    '503': unavailable,
  },
};
