import type { ZodOpenApiOperationObject } from 'zod-openapi';
import { errorAnswer, jsonAnswer } from '../openapi/responses';
import { resolveAnswerSchema } from '../openapi/schemas';
import { resolveRequestSchema } from './resolve-request';

export const resolveLinkDoc: ZodOpenApiOperationObject = {
  operationId: 'sdkResolveLink',
  summary: 'Resolve the URL that opened the app',
  description:
    "Names the link of a URL on the host of the key's app and environment (with any query or fragment, http or https) and hands over its deepLinkData. Counts nothing and stores nothing about the device.",
  tags: ['App interface'],
  requestBody: {
    required: true,
    content: { 'application/json': { schema: resolveRequestSchema } },
  },
  responses: {
    '200': jsonAnswer(
      'An active or archived link (an archived link keeps resolving).',
      resolveAnswerSchema,
    ),
    '404': errorAnswer(
      'not_found',
      "another host, a malformed URL, an unknown alias, another app's or environment's link: one identical answer.",
      'No such link.',
    ),
    '410': errorAnswer(
      'expired',
      'the link has expired; no data is given.',
      'The link has expired.',
    ),
    '422': errorAnswer(
      'invalid_request',
      'a missing, empty or non-string `url`, or an unknown field; `fields` names each.',
      'Some fields are invalid.',
      { fields: 'with' },
    ),
  },
};
