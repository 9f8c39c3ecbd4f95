import { OpenApiConformance } from './openapi-conformance';

const DOCUMENT = {
  openapi: '3.1.0',
  info: { title: 't', version: '1' },
  servers: [{ url: '/api/v1' }],
  paths: {
    '/links/{linkId}': {
      get: {
        operationId: 'getLink',
        responses: {
          '200': {
            description: 'ok',
            headers: {
              'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' },
              'RateLimit-Limit': { required: true, schema: { type: 'string', pattern: '^\\d+$' } },
            },
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: { link: { $ref: '#/components/schemas/Link' } },
                  required: ['link'],
                  additionalProperties: false,
                },
              },
            },
          },
        },
      },
    },
    '/links/batch': { post: { operationId: 'batch', responses: { '201': { description: 'ok' } } } },
  },
  components: {
    headers: { 'X-Request-Id': { schema: { type: 'string' } } },
    schemas: {
      Link: {
        type: 'object',
        properties: { id: { type: 'string' } },
        required: ['id'],
        additionalProperties: false,
      },
      Error: {
        type: 'object',
        properties: { error: { type: 'string' }, message: { type: 'string' } },
        required: ['error', 'message'],
      },
    },
  },
};

const conformance = new OpenApiConformance(DOCUMENT);

function answer(
  status: number,
  body: unknown,
  headers: Record<string, string> = { 'x-request-id': 'r', 'ratelimit-limit': '300' },
  method = 'GET',
  path = '/api/v1/links/lnk_1',
) {
  return { method, path, status, headers: new Headers(headers), body, text: JSON.stringify(body) };
}

describe('OpenApiConformance', () => {
  it('passes an answer the document describes (templated path, $ref schemas)', () => {
    expect(() => {
      conformance.check(answer(200, { link: { id: 'lnk_1' } }));
    }).not.toThrow();
  });

  it('fails a status the operation does not document', () => {
    expect(() => {
      conformance.check(answer(418, { error: 'x', message: 'y' }));
    }).toThrow('status 418 is not documented for GET /links/{linkId} (getLink); documented: 200');
  });

  it('fails a body off its schema, naming where', () => {
    expect(() => {
      conformance.check(answer(200, { link: { id: 1 } }));
    }).toThrow('body/link/id: must be string');
    expect(() => {
      conformance.check(answer(200, { link: { id: 'a' }, extra: 1 }));
    }).toThrow('must NOT have additional properties');
  });

  it('fails a missing required header, and X-Request-Id always', () => {
    expect(() => {
      conformance.check(answer(200, { link: { id: 'a' } }, { 'x-request-id': 'r' }));
    }).toThrow('documented required header RateLimit-Limit is missing');
    expect(() => {
      conformance.check(answer(200, { link: { id: 'a' } }, { 'ratelimit-limit': '1' }));
    }).toThrow('documented required header X-Request-Id is missing');
  });

  it('checks a method or path the document lacks against the error body', () => {
    const headers = { 'x-request-id': 'r', allow: 'POST' };
    expect(() => {
      conformance.check(
        answer(
          405,
          { error: 'method_not_allowed', message: 'm' },
          headers,
          'GET',
          '/api/v1/links/batch',
        ),
      );
    }).not.toThrow();
    expect(() => {
      conformance.check(
        answer(
          405,
          { error: 'method_not_allowed', message: 'm' },
          { 'x-request-id': 'r' },
          'GET',
          '/api/v1/links/batch',
        ),
      );
    }).toThrow('a 405 must carry Allow');
    expect(() => {
      conformance.check(answer(200, {}, headers, 'GET', '/api/v1/nope'));
    }).toThrow('GET on this path is not in the document, yet it answered 200');
  });

  it('lets only the answers any request may get through on a method or path it lacks', () => {
    const ids = { 'x-request-id': 'r' };
    const putAnsweredNotAllowed = (allow: string, path: string) =>
      answer(405, { error: 'method_not_allowed', message: 'm' }, { ...ids, allow }, 'PUT', path);
    expect(() => {
      conformance.check(
        answer(404, { error: 'not_found', message: 'm' }, ids, 'PATCH', '/api/v1/links/batch'),
      );
    }).toThrow('PATCH is not an operation of this path, yet it answered 404');
    expect(() => {
      conformance.check(putAnsweredNotAllowed('DELETE', '/api/v1/links/batch'));
    }).toThrow('a 405 must carry Allow: POST, not DELETE');
    expect(() => {
      conformance.check(putAnsweredNotAllowed('GET, HEAD', '/api/v1/links/lnk_1'));
    }).not.toThrow();
    expect(() => {
      conformance.check(
        answer(
          422,
          { error: 'invalid_request', message: 'm', fields: {} },
          ids,
          'GET',
          '/api/v1/nope',
        ),
      );
    }).toThrow('on a path the document does not have, yet it answered 422');
    expect(() => {
      conformance.check(
        answer(404, { error: 'conflict', message: 'm' }, ids, 'GET', '/api/v1/nope'),
      );
    }).toThrow('a 404 carries error "not_found", not "conflict"');
    expect(() => {
      conformance.check(
        answer(503, { error: 'unavailable', message: 'm' }, ids, 'GET', '/api/v1/nope'),
      );
    }).not.toThrow();
  });

  it('leaves answers outside the API alone', () => {
    expect(() => {
      conformance.check(answer(200, 'ok', {}, 'GET', '/readyz'));
    }).not.toThrow();
  });
});
