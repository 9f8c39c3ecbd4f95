import { z } from 'zod';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import { errorAnswer, jsonAnswer } from '../openapi/responses';
import { installErasedSchema, installReportedSchema } from '../openapi/schemas';
import { installRequestSchema } from './install-request';

export const reportInstallDoc: ZodOpenApiOperationObject = {
  operationId: 'sdkReportInstall',
  summary: 'Report an install (deferred deep linking)',
  description:
    "Matches deterministically only, in this order: the Play install referrer's `ls_click` token, a clipboard URL carrying `ls_click`, the URL the app was opened with on its first launch. A token matches once, within its app and environment and its time to live. No match is not an error.",
  tags: ['App interface'],
  requestBody: {
    required: true,
    content: { 'application/json': { schema: installRequestSchema } },
  },
  responses: {
    '201': jsonAnswer(
      'The install was recorded; `match.type` says whether it matched a link.',
      installReportedSchema,
    ),
    '422': errorAnswer(
      'invalid_request',
      'a missing or wrong `platform`, a field of the wrong type or too long, or an unknown field; `fields` names each.',
      'Some fields are invalid.',
      { fields: 'with' },
    ),
  },
};

export const eraseInstallDoc: ZodOpenApiOperationObject = {
  operationId: 'sdkEraseInstall',
  summary: "Erase one installation's data",
  description:
    'Deletes the install record and what it matched, within the request, and answers with a signed receipt. Repeating it after success is a 404.',
  tags: ['App interface'],
  requestParams: {
    path: z.object({
      installId: z.string().meta({
        description: 'From the install report.',
        example: 'ins_01JQ3Z6Y8N4T7K2M5P9R0S1V3W',
      }),
    }),
    header: z.object({
      'X-Install-Secret': z
        .string()
        .meta({ description: 'The `install.secret` of the install report.' }),
    }),
  },
  responses: {
    '200': jsonAnswer('Erased; the receipt is the proof.', installErasedSchema),
    '404': errorAnswer(
      'not_found',
      "an unknown id, a wrong or missing secret, another app's or environment's install, or one already erased: one identical answer.",
      'No such install.',
    ),
  },
};
