import { z } from 'zod';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import { byStatus, errorAnswer, jsonAnswer } from '../openapi/responses';
import { appAnswerSchema } from '../openapi/schemas';

export const getCurrentAppDoc: ZodOpenApiOperationObject = {
  operationId: 'getCurrentApp',
  summary: 'The app of the key',
  description: 'Returns the app the key belongs to, and the environment of the key.',
  tags: ['Apps'],
  responses: { '200': jsonAnswer('The app and the environment of the key.', appAnswerSchema) },
};

export const getAppDoc: ZodOpenApiOperationObject = {
  operationId: 'getApp',
  summary: 'One app by id',
  description:
    "Same answer as GET /app. `appId` is compared with the key's app: any other value is 404 `not_found` (never 403).",
  tags: ['Apps'],
  requestParams: {
    path: z.object({
      appId: z
        .string()
        .meta({ description: 'The app id.', example: 'app_01JQ3Z6Y8N4T7K2M5P9R0S1V3W' }),
    }),
  },
  responses: {
    '200': jsonAnswer("The key's app and environment.", appAnswerSchema),
    ...byStatus('not_found', errorAnswer('not_found', 'not the app of the key.', 'No such app.')),
  },
};
