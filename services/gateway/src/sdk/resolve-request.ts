import { z } from 'zod';
import type { FieldErrors } from '../http/errors';
import { parseSdkRequest, stringField } from './sdk-request';

/** POST /sdk/resolve's body (app-interface.md): the URL the app was opened with, nothing else. */
export const resolveRequestSchema = z
  .strictObject({
    url: z.string(stringField).min(1, { error: 'must not be empty' }).meta({
      description: 'The URL that opened the app.',
      example: 'https://acme.links.localhost/spring-sale?utm_source=email',
    }),
  })
  .meta({ id: 'ResolveRequest' });

export type ResolveRequestParse = { ok: true; url: string } | { ok: false; fields: FieldErrors };

/** The URL to resolve, or a 422's `fields` for everything wrong with the body. */
export function parseResolveRequest(body: unknown): ResolveRequestParse {
  const parsed = parseSdkRequest(resolveRequestSchema, body);
  return parsed.ok ? { ok: true, url: parsed.value.url } : parsed;
}
