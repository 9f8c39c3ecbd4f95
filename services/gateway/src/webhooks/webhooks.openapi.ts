import { z } from 'zod';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import { PREVIOUS_SECRET_HOURS, WEBHOOK_EVENT_TYPES } from '@linkservice/webhooks';
import { errorAnswer, jsonAnswer } from '../openapi/responses';
import {
  ATTEMPT_LOG_LENGTH,
  DELIVERY_STATUSES,
  deliveriesQuerySchema,
  MAX_WEBHOOKS_PER_ENVIRONMENT,
  webhookCreateBodySchema,
  webhookPatchBodySchema,
} from './webhook-params';

const isoMs = (description: string) =>
  z.string().meta({ description, format: 'date-time', example: '2030-01-31T12:00:00.000Z' });

export const webhookSchema = z
  .strictObject({
    id: z.string().meta({ example: 'whk_01JQ3Z6Y8N4T7K2M5P9R0S1V3W' }),
    url: z.string().meta({ format: 'uri', example: 'https://hooks.example.com/linkservice' }),
    description: z.string().nullable().meta({ example: 'Order sync' }),
    eventTypes: z
      .array(z.enum(WEBHOOK_EVENT_TYPES))
      .meta({ description: 'Distinct, in the order of the enum.' }),
    environment: z.enum(['live', 'test']).meta({
      description: 'The environment of the key that made it; only its events are sent.',
    }),
    status: z.enum(['enabled', 'disabled']).meta({
      description:
        '`disabled`: nothing is sent and pending deliveries wait, until a PATCH with `enabled: true`.',
    }),
    disabledReason: z.enum(['requested', 'failing', 'gone']).nullable().meta({
      description:
        '`requested` (a PATCH), `failing` (every attempt failed for 5 days) or `gone` (the endpoint answered 410); null while enabled.',
    }),
    disabledAt: isoMs('When it was disabled; null while enabled.').nullable(),
    failingSince: isoMs(
      'The first failed attempt since the last success; null when the last attempt succeeded.',
    ).nullable(),
    previousSecretExpiresAt: isoMs(
      `Until when the secret replaced by the last rotation still signs beside the current one (${PREVIOUS_SECRET_HOURS} h after it); null when none does.`,
    ).nullable(),
    createdAt: isoMs('Creation time.'),
    updatedAt: isoMs('Last change (moves only when something changed).'),
  })
  .meta({
    id: 'Webhook',
    description: 'An endpoint events are sent to; never its signing secret.',
  });

const secret = z.string().meta({
  description:
    'The signing secret (Standard Webhooks: `whsec_` and base64 of the key). Shown only here; store it to verify signatures.',
  example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
});

export const webhookAnswerSchema = z
  .strictObject({ webhook: webhookSchema })
  .meta({ id: 'WebhookAnswer', description: 'One webhook endpoint.' });

export const webhookSecretAnswerSchema = z.strictObject({ webhook: webhookSchema, secret }).meta({
  id: 'WebhookSecretAnswer',
  description: 'The endpoint and its new signing secret, shown this once.',
});

export const webhookListSchema = z
  .strictObject({ webhooks: z.array(webhookSchema) })
  .meta({ id: 'WebhookList', description: 'Every endpoint, oldest first.' });

const attemptSchema = z
  .strictObject({
    attempt: z.int().min(1).meta({ description: '1 for the first attempt.' }),
    at: isoMs('When the attempt began.'),
    durationMs: z.int().min(0),
    outcome: z
      .string()
      .meta({ description: 'How the attempt ended, as the delivery recorded it.' }),
    responseStatus: z
      .int()
      .nullable()
      .meta({ description: "The endpoint's status code; null without an answer.", example: 500 }),
    responseExcerpt: z.string().nullable().meta({
      description: 'The start of the answer body, as stored (short); null without one.',
    }),
  })
  .meta({ id: 'WebhookAttempt' });

export const webhookDeliverySchema = z
  .strictObject({
    id: z.string().meta({ example: 'dlv_6f1c2a9e0b7d4c3f8a5e1d2c3b4a5f6e' }),
    eventId: z.string().meta({
      description: 'Sent as `webhook-id` on every attempt: the receiver deduplicates by it.',
      example: 'evt_0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e',
    }),
    eventType: z.enum(WEBHOOK_EVENT_TYPES),
    status: z.enum(DELIVERY_STATUSES).meta({
      description:
        '`pending` until an attempt succeeds (`delivered`) or the retry schedule runs out (`failed`).',
    }),
    attempts: z.int().min(0).meta({ description: 'Attempts made so far.' }),
    createdAt: isoMs('When the event was written.'),
    nextAttemptAt: isoMs(
      'When the next attempt is due (while the endpoint is enabled); null unless pending.',
    ).nullable(),
    finishedAt: isoMs('When it was delivered or failed; null while pending.').nullable(),
    attemptLog: z
      .array(attemptSchema)
      .meta({ description: `The last ${ATTEMPT_LOG_LENGTH} attempts, newest first.` }),
  })
  .meta({ id: 'WebhookDelivery', description: 'One event sent (or to send) to one endpoint.' });

export const webhookDeliveryListSchema = z
  .strictObject({
    deliveries: z.array(webhookDeliverySchema),
    nextCursor: z.string().nullable().meta({
      description: 'Pass as `cursor` for the next page; null on the last page.',
    }),
  })
  .meta({ id: 'WebhookDeliveryList', description: 'One page of deliveries, newest first.' });

export const webhookDeliveryAnswerSchema = z
  .strictObject({ delivery: webhookDeliverySchema })
  .meta({ id: 'WebhookDeliveryAnswer' });

const webhookIdParam = z.object({
  webhookId: z.string().meta({
    description:
      "The endpoint id. An endpoint of another app, or of the key's other environment, is 404 like an unknown id.",
    example: 'whk_01JQ3Z6Y8N4T7K2M5P9R0S1V3W',
  }),
});

const deliveryParams = webhookIdParam.extend({
  deliveryId: z.string().meta({
    description: "A delivery of this endpoint; another endpoint's is 404 like an unknown id.",
    example: 'dlv_6f1c2a9e0b7d4c3f8a5e1d2c3b4a5f6e',
  }),
});

const notFound = errorAnswer(
  'not_found',
  'no such webhook in the app and environment of the key.',
  'No such webhook.',
);

const invalid = (description: string, example = 'Some fields are invalid.') =>
  errorAnswer('invalid_request', description, example, { fields: 'with' });

const TAGS = ['Webhooks'];

/** An action's body: none, or `{}`. */
const actionBody = {
  required: false,
  content: {
    'application/json': {
      schema: z.strictObject({}).meta({ description: 'No fields; the body may be left out.' }),
    },
  },
};

export const createWebhookDoc: ZodOpenApiOperationObject = {
  operationId: 'createWebhook',
  summary: 'Create a webhook endpoint',
  description: `Saves an endpoint for the app and environment of the key, enabled, and answers its signing secret: the only time it is shown (besides a rotation). At most ${MAX_WEBHOOKS_PER_ENVIRONMENT} endpoints per app and environment.`,
  tags: TAGS,
  requestBody: {
    required: true,
    content: { 'application/json': { schema: webhookCreateBodySchema } },
  },
  responses: {
    '201': jsonAnswer('The endpoint and its signing secret.', webhookSecretAnswerSchema),
    '409': errorAnswer(
      'conflict',
      `the app already has ${MAX_WEBHOOKS_PER_ENVIRONMENT} endpoints in this environment.`,
      `An app can have at most ${MAX_WEBHOOKS_PER_ENVIRONMENT} webhooks per environment; delete one first.`,
    ),
    '422': invalid(
      'a field is invalid: an http URL in live, a host that does not resolve or resolves to a refused address, an unknown event type, an unknown or server-set field; `fields` names each.',
    ),
  },
};

export const listWebhooksDoc: ZodOpenApiOperationObject = {
  operationId: 'listWebhooks',
  summary: 'List webhook endpoints',
  description: `Every endpoint of the app in the environment of the key (at most ${MAX_WEBHOOKS_PER_ENVIRONMENT}), oldest first.`,
  tags: TAGS,
  responses: { '200': jsonAnswer('The endpoints.', webhookListSchema) },
};

export const getWebhookDoc: ZodOpenApiOperationObject = {
  operationId: 'getWebhook',
  summary: 'Get one webhook endpoint',
  tags: TAGS,
  requestParams: { path: webhookIdParam },
  responses: { '200': jsonAnswer('The endpoint.', webhookAnswerSchema), '404': notFound },
};

export const updateWebhookDoc: ZodOpenApiOperationObject = {
  operationId: 'updateWebhook',
  summary: 'Change a webhook endpoint',
  description:
    'Changes only the fields sent, each by its rule on create. `enabled: false` disables the endpoint (reason `requested`); `enabled: true` enables it again and makes its pending deliveries due at once. `{}` changes nothing; updatedAt moves only when something changed.',
  tags: TAGS,
  requestParams: { path: webhookIdParam },
  requestBody: {
    required: true,
    content: { 'application/json': { schema: webhookPatchBodySchema } },
  },
  responses: {
    '200': jsonAnswer('The endpoint as it now stands.', webhookAnswerSchema),
    '404': notFound,
    '422': invalid('a field is invalid (as on create); `fields` names each.'),
  },
};

export const deleteWebhookDoc: ZodOpenApiOperationObject = {
  operationId: 'deleteWebhook',
  summary: 'Delete a webhook endpoint',
  description:
    'Deletes the endpoint with its deliveries and their attempts; nothing more is sent to it.',
  tags: TAGS,
  requestParams: { path: webhookIdParam },
  responses: { '204': { description: 'Deleted; no body.' }, '404': notFound },
};

export const rotateWebhookSecretDoc: ZodOpenApiOperationObject = {
  operationId: 'rotateWebhookSecret',
  summary: "Rotate a webhook endpoint's signing secret",
  description: `Makes a new signing secret. The current one keeps signing beside it for ${PREVIOUS_SECRET_HOURS} hours (each delivery carries both signatures), so the receiver can switch without losing events; a previous secret still valid is replaced.`,
  tags: TAGS,
  requestParams: { path: webhookIdParam },
  requestBody: actionBody,
  responses: {
    '200': jsonAnswer('The endpoint and its new signing secret.', webhookSecretAnswerSchema),
    '404': notFound,
    '422': invalid('the body has fields; this action takes none.', 'This action takes no fields.'),
  },
};

export const listWebhookDeliveriesDoc: ZodOpenApiOperationObject = {
  operationId: 'listWebhookDeliveries',
  summary: "List a webhook endpoint's deliveries",
  description: `The endpoint's deliveries, newest first, each with its last ${ATTEMPT_LOG_LENGTH} attempts; paged by cursor.`,
  tags: TAGS,
  requestParams: { path: webhookIdParam, query: deliveriesQuerySchema },
  responses: {
    '200': jsonAnswer('One page of deliveries.', webhookDeliveryListSchema),
    '404': notFound,
    '422': invalid(
      'a parameter is unknown, repeated or out of its range; `fields` names each.',
      'Some parameters are invalid.',
    ),
  },
};

export const retryWebhookDeliveryDoc: ZodOpenApiOperationObject = {
  operationId: 'retryWebhookDelivery',
  summary: 'Retry a delivery',
  description:
    'Gives the delivery one more attempt now, whatever its status: it is pending again and due at once.',
  tags: TAGS,
  requestParams: { path: deliveryParams },
  requestBody: actionBody,
  responses: {
    '202': jsonAnswer('The delivery, pending and due.', webhookDeliveryAnswerSchema),
    '404': errorAnswer(
      'not_found',
      'no such webhook in the app and environment of the key, or no such delivery of it.',
      'No such delivery.',
    ),
    '409': errorAnswer(
      'conflict',
      'the endpoint is disabled: enable it first.',
      'The webhook is disabled; enable the webhook first.',
    ),
    '422': invalid('the body has fields; this action takes none.', 'This action takes no fields.'),
  },
};
