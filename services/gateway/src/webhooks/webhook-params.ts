import { z } from 'zod';
import type { Environment, WebhookDeliveryStatus } from '@linkservice/db';
import type { WebhookEventType } from '@linkservice/webhooks';
import {
  endpointUrlProblem,
  MAX_WEBHOOK_URL_LENGTH,
  WEBHOOK_EVENT_TYPES,
} from '@linkservice/webhooks';
import type { FieldErrors } from '../http/errors';
import { readQuery } from '../http/query-reader';

/** Endpoints an app may have in one environment; one more is a 409. */
export const MAX_WEBHOOKS_PER_ENVIRONMENT = 20;
export const MAX_DESCRIPTION_LENGTH = 500;
export const DEFAULT_DELIVERIES_LIMIT = 20;
export const MAX_DELIVERIES_LIMIT = 100;
/** Attempts shown per delivery, newest first. */
export const ATTEMPT_LOG_LENGTH = 10;

export const DELIVERY_STATUSES = [
  'pending',
  'delivered',
  'failed',
] as const satisfies readonly WebhookDeliveryStatus[];

const EVENT_TYPE_LIST = WEBHOOK_EVENT_TYPES.join(', ');

/**
 * Postgres text refuses NUL, and an unpaired surrogate would be stored as U+FFFD, not as sent;
 * whitespace and control characters in a URL are dropped or escaped by URL parsers, so the URL
 * delivered would not be the one shown.
 */
const UNSTORABLE = /[\0\p{Cs}]/u;
const NOT_IN_URL = /[\p{Cc}\s\p{Cs}]/u;

/** Characters as people count them (an emoji is one), as for links' text fields. */
function codePoints(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

const MESSAGES = {
  url: `must be an absolute http(s) URL of at most ${MAX_WEBHOOK_URL_LENGTH} characters`,
  urlCharacters: 'must not contain spaces, control characters or unpaired surrogates',
  eventTypes: `must be a non-empty array of distinct event types, each one of ${EVENT_TYPE_LIST}`,
  eventTypesEmpty: 'must name at least one event type',
  eventTypesRepeated: 'must not name an event type twice',
  description: `must be a string of at most ${MAX_DESCRIPTION_LENGTH} characters, or null`,
  unstorable: 'must not contain NUL characters or unpaired UTF-16 surrogates',
  enabled: 'must be true or false',
  serverSet: 'is set by the server and cannot be sent',
  unknown: 'is not a field of a webhook',
  notOnCreate: 'cannot be sent on create: a new webhook is enabled',
} as const;

/**
 * The rules of each field a caller sends, with the words the API document gives them: the
 * parsers below apply them field by field (so every bad field is named), and the documented
 * bodies are built from them.
 */
const urlInput = z
  .string({ error: MESSAGES.url })
  .max(MAX_WEBHOOK_URL_LENGTH, { error: MESSAGES.url })
  .refine((url) => !NOT_IN_URL.test(url), { error: MESSAGES.urlCharacters })
  .meta({
    description: `Where events are POSTed: an absolute URL of at most ${MAX_WEBHOOK_URL_LENGTH} characters, https in live (http is allowed in test), without credentials or fragment. Its host must resolve, and every address it resolves to must be public: loopback, private, link-local, multicast, unspecified, reserved and cloud-metadata addresses are refused (unless the operator allowed the range).`,
    format: 'uri',
    example: 'https://hooks.example.com/linkservice',
  });

const eventTypeInput = z.enum(WEBHOOK_EVENT_TYPES, {
  error: (issue) =>
    `names an unknown event type ${JSON.stringify(issue.input)}; known: ${EVENT_TYPE_LIST}`,
});

const eventTypesInput = z
  .array(eventTypeInput, { error: MESSAGES.eventTypes })
  .min(1, { error: MESSAGES.eventTypesEmpty })
  .refine((types) => new Set(types).size === types.length, {
    error: MESSAGES.eventTypesRepeated,
  })
  .meta({
    description:
      'The event types sent to this endpoint: at least one, each once. Shown in the order the document lists the types.',
    uniqueItems: true,
    example: ['link.created', 'link.updated'],
  });

const descriptionInput = z
  .string({ error: MESSAGES.description })
  .refine((text) => codePoints(text) <= MAX_DESCRIPTION_LENGTH, { error: MESSAGES.description })
  .refine((text) => !UNSTORABLE.test(text), { error: MESSAGES.unstorable })
  .nullable()
  .meta({
    description: `For people, at most ${MAX_DESCRIPTION_LENGTH} characters; null clears it.`,
    maxLength: MAX_DESCRIPTION_LENGTH,
    example: 'Order sync',
  });

const enabledInput = z.boolean({ error: MESSAGES.enabled }).meta({
  description:
    '`false` disables the endpoint (nothing is sent; its pending deliveries wait). `true` enables a disabled one, whatever disabled it: its failing state is cleared and its pending deliveries are due at once.',
});

export const webhookCreateBodySchema = z
  .strictObject({
    url: urlInput,
    eventTypes: eventTypesInput,
    description: descriptionInput.optional(),
  })
  .meta({
    id: 'WebhookCreate',
    description:
      'A new endpoint, enabled. An unknown or server-set field is a 422 naming it, like every bad field.',
  });

export const webhookPatchBodySchema = z
  .strictObject({
    url: urlInput.optional(),
    eventTypes: eventTypesInput.optional(),
    description: descriptionInput.optional(),
    enabled: enabledInput.optional(),
  })
  .meta({
    id: 'WebhookPatch',
    description:
      'Only the fields to change, each by its rule on create; `{}` changes nothing. An unknown or server-set field is a 422 naming it.',
  });

/** The resource's members: a caller sending one is told the server sets it. */
const SERVER_SET = new Set([
  'id',
  'environment',
  'status',
  'disabledReason',
  'disabledAt',
  'failingSince',
  'previousSecretExpiresAt',
  'createdAt',
  'updatedAt',
  'secret',
]);

/** What a valid body asks to change; `url` still needs its destination checked. */
export interface WebhookChanges {
  url?: string;
  /** Distinct, in WEBHOOK_EVENT_TYPES' order: the same set is the same value. */
  eventTypes?: WebhookEventType[];
  description?: string | null;
  enabled?: boolean;
}

export interface WebhookDraft {
  url: string;
  eventTypes: WebhookEventType[];
  description: string | null;
}

export type WebhookBodyParse<T> = { ok: true; value: T } | { ok: false; fieldErrors: FieldErrors };

function canonicalOrder(types: readonly WebhookEventType[]): WebhookEventType[] {
  return WEBHOOK_EVENT_TYPES.filter((type) => types.includes(type));
}

/** One field's rule: its value, or its message recorded. */
function apply<T>(
  schema: z.ZodType<T>,
  field: string,
  value: unknown,
  errors: Map<string, string>,
): T | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  errors.set(field, result.error.issues[0]?.message ?? 'is invalid');
  return undefined;
}

/**
 * The fields of a body, each by its rule; `allowEnabled` only for PATCH. The URL's form depends
 * on the environment (https in live); its destination is checked by the service.
 */
function parseFields(
  body: Record<string, unknown>,
  environment: Environment,
  allowEnabled: boolean,
): { changes: WebhookChanges; errors: Map<string, string> } {
  // A Map, copied with Object.fromEntries: a field named __proto__ is named like any other.
  const errors = new Map<string, string>();
  const changes: WebhookChanges = {};
  for (const [field, value] of Object.entries(body)) {
    switch (field) {
      case 'url': {
        const url = apply(urlInput, field, value, errors);
        if (url === undefined) break;
        const problem = endpointUrlProblem(url, environment);
        if (problem === undefined) changes.url = url;
        else errors.set(field, problem);
        break;
      }
      case 'eventTypes': {
        const types = apply(eventTypesInput, field, value, errors);
        if (types) changes.eventTypes = canonicalOrder(types);
        break;
      }
      case 'description': {
        const description = apply(descriptionInput, field, value, errors);
        if (description !== undefined) changes.description = description;
        break;
      }
      case 'enabled':
        if (!allowEnabled) errors.set(field, MESSAGES.notOnCreate);
        else {
          const enabled = apply(enabledInput, field, value, errors);
          if (enabled !== undefined) changes.enabled = enabled;
        }
        break;
      default:
        errors.set(field, SERVER_SET.has(field) ? MESSAGES.serverSet : MESSAGES.unknown);
    }
  }
  return { changes, errors };
}

/** POST /webhooks: url and eventTypes required, description optional. */
export function parseWebhookCreate(
  body: Record<string, unknown>,
  environment: Environment,
): WebhookBodyParse<WebhookDraft> {
  const { changes, errors } = parseFields(body, environment, false);
  for (const field of ['url', 'eventTypes'] as const) {
    if (!Object.hasOwn(body, field)) errors.set(field, 'is required');
  }
  const { url, eventTypes } = changes;
  if (errors.size > 0 || url === undefined || eventTypes === undefined) {
    return { ok: false, fieldErrors: Object.fromEntries(errors) };
  }
  return { ok: true, value: { url, eventTypes, description: changes.description ?? null } };
}

/** PATCH /webhooks/{id}: only the fields sent; `{}` is valid and changes nothing. */
export function parseWebhookPatch(
  body: Record<string, unknown>,
  environment: Environment,
): WebhookBodyParse<WebhookChanges> {
  const { changes, errors } = parseFields(body, environment, true);
  return errors.size > 0
    ? { ok: false, fieldErrors: Object.fromEntries(errors) }
    : { ok: true, value: changes };
}

/**
 * The bodies of the actions (rotate-secret, retry): none, or an empty object. A member is a 422
 * naming it: these actions take no input, and a caller sending some expects it to mean something.
 */
export function actionBodyProblems(body: Record<string, unknown> | undefined): FieldErrors {
  const errors = new Map<string, string>();
  for (const field of Object.keys(body ?? {})) errors.set(field, 'this action takes no fields');
  return Object.fromEntries(errors);
}

export interface DeliveriesQuery {
  limit: number;
  status: WebhookDeliveryStatus | null;
  /** The last delivery id of the previous page: only older deliveries. */
  cursor: string | null;
}

export type DeliveriesQueryParse =
  { ok: true; query: DeliveriesQuery } | { ok: false; fields: FieldErrors };

const DELIVERIES_PARAMETERS: readonly string[] = ['limit', 'status', 'cursor'];

/** The ids the API makes: a cursor of another form names no delivery. */
const CURSOR = /^dlv_[0-9a-f]{32}$/;

/** GET /webhooks/{id}/deliveries, every problem named (like the analytics parameters). */
export function parseDeliveriesQuery(raw: Record<string, unknown>): DeliveriesQueryParse {
  const { fields, text } = readQuery(raw, (name) => DELIVERIES_PARAMETERS.includes(name));
  let limit = DEFAULT_DELIVERIES_LIMIT;
  const limitText = text('limit');
  if (limitText !== undefined) {
    const parsed = /^\d{1,4}$/.test(limitText) ? Number(limitText) : NaN;
    if (parsed >= 1 && parsed <= MAX_DELIVERIES_LIMIT) limit = parsed;
    else fields.limit = `must be an integer from 1 to ${MAX_DELIVERIES_LIMIT}`;
  }
  let status: WebhookDeliveryStatus | null = null;
  const statusText = text('status');
  if (statusText !== undefined) {
    const parsed = z.enum(DELIVERY_STATUSES).safeParse(statusText).data;
    if (parsed) status = parsed;
    else fields.status = `must be one of ${DELIVERY_STATUSES.join(', ')}`;
  }
  let cursor: string | null = null;
  const cursorText = text('cursor');
  if (cursorText !== undefined) {
    if (CURSOR.test(cursorText)) cursor = cursorText;
    else fields.cursor = 'must be the nextCursor of a previous page';
  }
  if (Object.keys(fields).length > 0) return { ok: false, fields };
  return { ok: true, query: { limit, status, cursor } };
}

/** The same parameters as the API document shows them. */
export const deliveriesQuerySchema = z.object({
  limit: z
    .int()
    .min(1)
    .max(MAX_DELIVERIES_LIMIT)
    .default(DEFAULT_DELIVERIES_LIMIT)
    .meta({ description: `Deliveries per page, 1 to ${MAX_DELIVERIES_LIMIT}.` }),
  status: z
    .enum(DELIVERY_STATUSES)
    .optional()
    .meta({ description: 'Only deliveries of this status. Default: every status.' }),
  cursor: z.string().optional().meta({
    description:
      "The previous page's `nextCursor`: the deliveries after it, in the same order. A cursor whose delivery is gone (deleted with its endpoint, or past retention) gives an empty page.",
    example: 'dlv_6f1c2a9e0b7d4c3f8a5e1d2c3b4a5f6e',
  }),
});
