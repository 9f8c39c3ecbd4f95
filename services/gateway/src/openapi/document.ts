import { z } from 'zod';
import type {
  ZodOpenApiObject,
  ZodOpenApiOperationObject,
  ZodOpenApiPathsObject,
  ZodOpenApiResponseObject,
} from 'zod-openapi';
import { createDocument } from 'zod-openapi';
import type { oas31 } from 'zod-openapi';
import type { ApiRoute } from '../http/routes';
import { COMMON_ERRORS, errorAnswer, HEADERS, SDK_UNAUTHORISED } from './responses';
import { errorBodySchema } from './schemas';

export type OpenApiDocument = oas31.OpenAPIObject;

/** Where the document is served, relative to the API's base path. */
export const OPENAPI_PATH = '/openapi.json';

/** The route lists app.ts mounts: secret-key routes at /api/v1, publishable-key ones at /sdk. */
export interface DocumentedRoutes {
  api: readonly ApiRoute[];
  sdk: readonly ApiRoute[];
}

const REQUEST_ID_HEADER = 'X-Request-Id';

const SDK_RATE_LIMITED = errorAnswer(
  'rate_limited',
  'the abuse limit of the key and client address (per minute, shared by the three endpoints) is used up.',
  'Too many requests with this key from this address; retry in 12 s.',
  { headers: { 'Retry-After': HEADERS.retryAfter } },
);

const DESCRIPTION = `Deep links for mobile apps.

The secret-key endpoints are called from the customer's server with \`Authorization: Bearer ls_sk_<live|test>_…\`; the app-interface endpoints under \`/sdk\` from the customer's app with a publishable key (\`ls_pk_…\`). Every key belongs to one app and one environment, and every request is scoped to them: an object of another app or environment is a 404 like a missing one.

Every failure has the body \`{ "error": <slug>, "message": <text> }\` (plus \`fields\` on a 422 \`invalid_request\`); clients branch on the slug. Every answer carries \`X-Request-Id\` (the caller's, if it sent a sane one). An unknown path is a 404 \`not_found\`; a known path with another method is a 405 \`method_not_allowed\` with \`Allow\`, both after authentication. A trailing slash is ignored (\`/app/\` is \`/app\`). The version is in the path; breaking changes are listed in the changelog.`;

/** `/links/:linkId` → `/links/{linkId}`. */
export function openApiPath(expressPath: string): string {
  return expressPath.replace(/:(\w+)/g, '{$1}');
}

function withCommonErrors(
  operation: ZodOpenApiOperationObject,
  extra: Record<string, ZodOpenApiResponseObject>,
): ZodOpenApiOperationObject['responses'] {
  return { ...COMMON_ERRORS, ...extra, ...operation.responses };
}

function addRoutes(
  paths: ZodOpenApiPathsObject,
  routes: readonly ApiRoute[],
  prefix: string,
  security: string,
  extraErrors: Record<string, ZodOpenApiResponseObject>,
): void {
  for (const route of routes) {
    if (!route.openapi) {
      throw new Error(
        `${route.method} ${prefix}${route.path} has no openapi member: document it in its module's *.openapi.ts`,
      );
    }
    const path = `${prefix}${openApiPath(route.path)}`;
    const item = (paths[path] ??= {});
    const method = route.method.toLowerCase() as Lowercase<ApiRoute['method']>;
    item[method] = {
      ...route.openapi,
      security: [{ [security]: [] }],
      responses: withCommonErrors(route.openapi, extraErrors),
    };
  }
}

/** The document about itself: served without a key, so only a failure of the server is left. */
const getDocumentOperation: ZodOpenApiOperationObject = {
  operationId: 'getOpenApiDocument',
  summary: 'This document',
  description: 'The OpenAPI 3.1 document of the API; no key is needed.',
  tags: ['Meta'],
  security: [],
  responses: {
    '200': {
      description: 'The document.',
      content: { 'application/json': { schema: z.record(z.string(), z.unknown()) } },
    },
    '500': COMMON_ERRORS['500'],
  },
};

/**
 * Builds the OpenAPI 3.1 document from the route lists app.ts mounts: each route's `openapi`
 * member, the errors every route can meet, the two security schemes, and X-Request-Id on every
 * answer. Throws when a route is not documented.
 */
export function buildOpenApiDocument(routes: DocumentedRoutes): OpenApiDocument {
  const paths: ZodOpenApiPathsObject = { [OPENAPI_PATH]: { get: getDocumentOperation } };
  addRoutes(paths, routes.api, '', 'secretKey', {});
  addRoutes(paths, routes.sdk, '/sdk', 'publishableKey', {
    '401': SDK_UNAUTHORISED,
    '429': SDK_RATE_LIMITED,
  });

  const spec: ZodOpenApiObject = {
    openapi: '3.1.0',
    info: {
      title: 'Link Service API',
      version: '1.0.0',
      description: DESCRIPTION,
    },
    servers: [{ url: '/api/v1', description: 'The API base path, on the gateway.' }],
    tags: [
      { name: 'Apps', description: 'The app of the key.' },
      { name: 'Links', description: 'Creating, reading, changing and archiving links.' },
      {
        name: 'Analytics',
        description:
          'Clicks over time and by dimension, from aggregates only: no address, user agent or full referrer is ever stored.',
      },
      {
        name: 'Webhooks',
        description:
          "Endpoints the app's events are POSTed to, signed (Standard Webhooks), and their deliveries.",
      },
      {
        name: 'App interface',
        description: "Publishable-key endpoints for the customer's mobile app.",
      },
      { name: 'Meta', description: 'About the API itself.' },
    ],
    paths,
    components: {
      securitySchemes: {
        secretKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            "A secret key, `ls_sk_live_…` or `ls_sk_test_…`, for the customer's server. A publishable key is a 401 here.",
        },
        publishableKey: {
          type: 'http',
          scheme: 'bearer',
          description:
            'A publishable key, `ls_pk_live_…` or `ls_pk_test_…`, shipped inside apps; for `/sdk` only (a secret key is a 401 there).',
        },
      },
      schemas: { Error: errorBodySchema },
      responses: {
        NotFound: errorAnswer(
          'not_found',
          'no route for this path.',
          'No route for GET /api/v1/nope.',
        ),
        MethodNotAllowed: errorAnswer(
          'method_not_allowed',
          'the path exists, the method does not; `Allow` lists the methods it has.',
          'POST is not allowed here; use GET, HEAD.',
          { headers: { Allow: z.string().meta({ example: 'GET, HEAD' }) } },
        ),
      },
      headers: {
        [REQUEST_ID_HEADER]: z.string().meta({
          description:
            "The request's id: the caller's X-Request-Id if it sent a sane one, else a new one. Also on the gateway's log line.",
          example: '0b9d1c1e-5f4a-4d9e-9a57-3f3f6f2a8c11',
        }),
      },
    },
  };
  const document = createDocument(spec);
  addRequestIdHeader(document);
  return document;
}

/** Every answer of every operation and component carries X-Request-Id. */
function addRequestIdHeader(document: OpenApiDocument): void {
  const ref = { $ref: `#/components/headers/${REQUEST_ID_HEADER}` };
  const responses: unknown[] = Object.values(document.components?.responses ?? {});
  for (const item of Object.values(document.paths ?? {})) {
    for (const operation of Object.values(item)) {
      const answers = (operation as { responses?: Record<string, unknown> }).responses;
      if (answers) responses.push(...Object.values(answers));
    }
  }
  for (const response of responses) {
    const target = response as { headers?: Record<string, unknown> };
    target.headers = { [REQUEST_ID_HEADER]: ref, ...target.headers };
  }
}

/** The document as committed at docs/openapi.json and served: two-space JSON, newline. */
export function documentText(document: OpenApiDocument): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
