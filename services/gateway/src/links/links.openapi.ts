import { z } from 'zod';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import { linkPatchBodySchema } from '@linkservice/contracts';
import { errorAnswer, jsonAnswer } from '../openapi/responses';
import { archiveAnswerSchema, linkAnswerSchema, linkListSchema } from '../openapi/schemas';
import { listQuerySchema } from './list-params';

const linkIdParam = z.object({
  linkId: z.string().meta({
    description:
      "The link id. A link of another app, or of the key's other environment, is 404 like an unknown id.",
    example: 'lnk_01JQ3Z6Y8N4T7K2M5P9R0S1V3W',
  }),
});

const notFound = errorAnswer(
  'not_found',
  'no such link in the app and environment of the key.',
  'No such link.',
);

export const listLinksDoc: ZodOpenApiOperationObject = {
  operationId: 'listLinks',
  summary: 'List links',
  description:
    'The links of the app in the environment of the key, filtered (filters combine with AND), sorted and paged.',
  tags: ['Links'],
  requestParams: { query: listQuerySchema },
  responses: { '200': jsonAnswer('One page of links.', linkListSchema) },
};

export const getLinkDoc: ZodOpenApiOperationObject = {
  operationId: 'getLink',
  summary: 'Get one link',
  tags: ['Links'],
  requestParams: { path: linkIdParam },
  responses: { '200': jsonAnswer('The link.', linkAnswerSchema), '404': notFound },
};

export const updateLinkDoc: ZodOpenApiOperationObject = {
  operationId: 'updateLink',
  summary: 'Change a link',
  description:
    'Changes only the fields sent, each by the rule it has on create; `null` clears a nullable field. `{}` changes nothing; updatedAt moves only when something changed.',
  tags: ['Links'],
  requestParams: { path: linkIdParam },
  requestBody: { required: true, content: { 'application/json': { schema: linkPatchBodySchema } } },
  responses: {
    '200': jsonAnswer('The whole link as it now stands.', linkAnswerSchema),
    '404': notFound,
    '409': errorAnswer(
      'conflict',
      'the link is archived; an archived link cannot be changed.',
      'The link is archived, and an archived link cannot be changed.',
    ),
    '422': errorAnswer(
      'invalid_request',
      'a field is invalid (an alias other than the current one, an unknown or server-set field included); `fields` names each.',
      'Some fields are invalid.',
      { fields: 'with' },
    ),
  },
};

export const archiveLinkDoc: ZodOpenApiOperationObject = {
  operationId: 'archiveLink',
  summary: 'Archive a link',
  description:
    'Archives the link; it is not deleted. It keeps resolving to its web fallback, its alias stays taken, and there is no unarchive.',
  tags: ['Links'],
  requestParams: { path: linkIdParam },
  responses: {
    '200': jsonAnswer('The archived link and a note.', archiveAnswerSchema),
    '404': notFound,
    '409': errorAnswer(
      'conflict',
      'the link is already archived.',
      'The link is already archived.',
    ),
  },
};
