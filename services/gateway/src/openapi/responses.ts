import { z } from 'zod';
import { LINK_INPUT_LIMITS } from '@linkservice/contracts';
import type { ZodOpenApiResponseObject } from 'zod-openapi';
import type { ErrorSlug } from '../http/errors';
import { ERROR_STATUS } from '../http/errors';
import { PUBLISHABLE_KEYS, SECRET_KEYS } from '../auth/auth.middleware';
import { errorBodyOf } from './schemas';

/**
 * Building blocks of the operations' documentation (each module's *.openapi.ts): answer headers
 * and error answers, so every operation says them in the same words.
 */

const seconds = (description: string) =>
  z.string().regex(/^\d+$/).meta({ description, example: '3600' });

export const HEADERS = {
  retryAfter: seconds('Whole seconds to wait before retrying (at least 1).'),
  rateLimitLimit: seconds('Link creations allowed per window (per app; live and test share it).'),
  rateLimitRemaining: seconds('Creations left in the current window.'),
  rateLimitReset: seconds('Seconds until the window resets.'),
  idempotentReplayed: z.literal('true').meta({
    description:
      'Present (`true`) when this is the stored answer of an earlier request with the same Idempotency-Key and body; absent on a first answer.',
  }),
  wwwAuthenticate: z.literal('Bearer'),
} as const;

/** RateLimit-* on the creation answers (decisions.md: 201, 207, 422, 429). */
export function rateLimitHeaders(required: boolean) {
  const ofRequired = <T extends z.ZodType>(schema: T) => (required ? schema : schema.optional());
  return {
    'RateLimit-Limit': ofRequired(HEADERS.rateLimitLimit),
    'RateLimit-Remaining': ofRequired(HEADERS.rateLimitRemaining),
    'RateLimit-Reset': ofRequired(HEADERS.rateLimitReset),
  };
}

/** A JSON answer. X-Request-Id is added to every answer by the document builder. */
export function jsonAnswer(
  description: string,
  schema: z.ZodType,
  headers: Record<string, z.ZodType> = {},
): ZodOpenApiResponseObject {
  return {
    description,
    ...(Object.keys(headers).length > 0 && { headers: z.object(headers) }),
    content: { 'application/json': { schema } },
  };
}

export interface ErrorAnswerOptions {
  /** `with`: every such answer names fields; `maybe`: some do (e.g. the plan allowance's 422). */
  fields?: 'with' | 'without' | 'maybe';
  headers?: Record<string, z.ZodType>;
}

/** A failure of one slug, at that slug's status, with an example message. */
export function errorAnswer(
  slug: ErrorSlug,
  description: string,
  example: string,
  options: ErrorAnswerOptions = {},
): ZodOpenApiResponseObject {
  return jsonAnswer(
    `\`${slug}\`: ${description}`,
    errorBodyOf(slug, example, options.fields),
    options.headers,
  );
}

/** Keyed by status code, as an operation's `responses` is. */
export function byStatus(
  slug: ErrorSlug,
  response: ZodOpenApiResponseObject,
): Record<string, ZodOpenApiResponseObject> {
  return { [String(ERROR_STATUS[slug])]: response };
}

/**
 * What any request of either interface can meet before its handler: the body rules (every route
 * reads a body if one is sent), the key check, a dependency that does not answer, a bug.
 */
/** The app interface's 401: the same answer, naming the publishable key it wants. */
export const SDK_UNAUTHORISED = errorAnswer(
  'unauthorised',
  'the key is missing, malformed, unknown, revoked or a secret key; one identical answer for all.',
  PUBLISHABLE_KEYS.message,
  { headers: { 'WWW-Authenticate': HEADERS.wwwAuthenticate } },
);

export const COMMON_ERRORS = {
  '400': errorAnswer(
    'invalid_body',
    `the body is not valid JSON, not a JSON object, not sent as \`Content-Type: application/json\`, nested more than ${LINK_INPUT_LIMITS.bodyDepth} levels deep, or missing where required; nothing was read.`,
    'The request body must be a JSON object.',
  ),
  '401': errorAnswer(
    'unauthorised',
    'the key is missing, malformed, unknown, revoked or of the other kind; one identical answer for all.',
    SECRET_KEYS.message,
    { headers: { 'WWW-Authenticate': HEADERS.wwwAuthenticate } },
  ),
  '413': errorAnswer(
    'payload_too_large',
    'the body is larger than 2 MiB.',
    'The request body is larger than 2 MiB.',
  ),
  '500': errorAnswer(
    'internal',
    'an unexpected failure; no internal detail is given.',
    'Something went wrong on our side.',
  ),
  '503': errorAnswer(
    'unavailable',
    'Postgres, Redis or the workers did not answer in time; nothing half-done is left behind.',
    'The service is temporarily unavailable; retry shortly.',
    { headers: { 'Retry-After': HEADERS.retryAfter } },
  ),
} satisfies Record<string, ZodOpenApiResponseObject>;
