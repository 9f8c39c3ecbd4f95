import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import type { Tenant } from '@linkservice/testing';
import { createTenant } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';
import { ApiError } from './errors';
import { MAX_BODY_BYTES, bodyOf } from './json-body';

let gateway: TestGateway;
let tenant: Tenant;
let key: string;

const INTERNAL_DETAIL = 'relation "secret_internal_table" does not exist';

beforeAll(async () => {
  gateway = await startGateway({
    logLevel: 'error',
    // Routes that exist only here, to drive the error middleware and the body rules.
    routes: (_deps, defaults) => [
      ...defaults,
      {
        method: 'POST',
        path: '/echo',
        handler: (req, res) => {
          res.json({ received: bodyOf(req) });
        },
      },
      {
        method: 'PATCH',
        path: '/echo',
        handler: (req, res) => {
          res.json({ received: bodyOf(req) });
        },
      },
      {
        method: 'GET',
        path: '/throws',
        handler: () => {
          throw new Error(INTERNAL_DETAIL);
        },
      },
      {
        method: 'GET',
        path: '/rejects',
        handler: async () => {
          await Promise.resolve();
          throw new TypeError(INTERNAL_DETAIL);
        },
      },
      {
        method: 'GET',
        path: '/limited',
        handler: () => {
          throw new ApiError('rate_limited', 'Slow down.', { headers: { 'Retry-After': '42' } });
        },
      },
      {
        method: 'GET',
        path: '/invalid',
        handler: () => {
          throw new ApiError('invalid_request', 'Some fields are invalid.', {
            fields: { alias: 'is taken' },
          });
        },
      },
    ],
  });
  tenant = await createTenant(gateway.deps.db);
  key = tenant.live.secret;
});
afterAll(async () => {
  await gateway.stop();
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('JSON bodies', () => {
  it('accepts a JSON object, with or without a charset', async () => {
    const res = await gateway.api('/api/v1/echo', { key, body: { a: 1, nested: { b: [true] } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: { a: 1, nested: { b: [true] } } });
    const withCharset = await gateway.api('/api/v1/echo', {
      key,
      method: 'PATCH',
      rawBody: Buffer.from('{}'),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(withCharset.status).toBe(200);
    expect(withCharset.body).toEqual({ received: {} });
  });

  it.each([
    ['malformed JSON', '{"a": '],
    ['an array', '[{"a": 1}]'],
    ['a string', '"text"'],
    ['null', 'null'],
    ['a number', '42'],
    ['a trailing comma', '{"a": 1,}'],
  ])('refuses %s with 400 invalid_body', async (_case, raw) => {
    const res = await gateway.api('/api/v1/echo', {
      key,
      rawBody: Buffer.from(raw),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_body', message: expect.any(String) });
    expect(res.headers.get('x-request-id')).toMatch(UUID);
  });

  it.each([
    ['no Content-Type', {}],
    ['text/plain', { 'content-type': 'text/plain' }],
    ['form encoding', { 'content-type': 'application/x-www-form-urlencoded' }],
  ])('refuses a body sent with %s', async (_case, headers: Record<string, string>) => {
    const res = await gateway.api('/api/v1/echo', {
      key,
      rawBody: Buffer.from('{"a": 1}'),
      headers,
    });
    expect(res.status).toBe(400);
    expect(res.body?.error).toBe('invalid_body');
  });

  // body-parser decodes these encodings; the API accepts a compressed JSON body as it always has.
  const ENCODERS: Record<string, (raw: Buffer) => Buffer> = {
    gzip: (raw) => gzipSync(raw),
    deflate: (raw) => deflateSync(raw),
    br: (raw) => brotliCompressSync(raw),
  };

  it.each(Object.keys(ENCODERS))('reads a JSON body compressed with %s', async (encoding) => {
    const raw = Buffer.from('{"a":1}');
    const res = await gateway.api('/api/v1/echo', {
      key,
      rawBody: ENCODERS[encoding](raw),
      headers: { 'content-type': 'application/json', 'content-encoding': encoding },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ received: { a: 1 } });
  });

  it.each([
    ['a plain body as gzip', 'gzip', Buffer.from('{"a":1}')],
    ['a plain body as deflate', 'deflate', Buffer.from('{"a":1}')],
    ['a plain body as br', 'br', Buffer.from('{"a":1}')],
    ['a plain body as GZIP', 'GZIP', Buffer.from('{"a":1}')],
    ['a gzip body cut short', 'gzip', gzipSync('{"a":1}').subarray(0, 12)],
    ['a deflate body cut short', 'deflate', deflateSync('{"a":1}').subarray(0, 4)],
    ['an encoding nobody decodes', 'compress', Buffer.from('{"a":1}')],
  ])('refuses %s with 400 invalid_body', async (_case, encoding, rawBody) => {
    for (const method of ['POST', 'PATCH']) {
      const res = await gateway.api('/api/v1/echo', {
        key,
        method,
        rawBody,
        headers: {
          'content-type': 'application/json',
          'content-encoding': encoding,
          'x-request-id': `enc-${method}`,
        },
      });
      expect({ method, status: res.status, body: res.body }).toEqual({
        method,
        status: 400,
        body: { error: 'invalid_body', message: expect.any(String) },
      });
      expect(res.headers.get('x-request-id')).toBe(`enc-${method}`);
    }
  });

  it('refuses POST and PATCH without a body', async () => {
    for (const method of ['POST', 'PATCH']) {
      const res = await gateway.api('/api/v1/echo', {
        key,
        method,
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect(res.body?.error).toBe('invalid_body');
    }
  });

  it('reads a body of exactly 2 MiB', async () => {
    const padding = MAX_BODY_BYTES - JSON.stringify({ pad: '' }).length;
    const raw = JSON.stringify({ pad: 'x'.repeat(padding) });
    expect(Buffer.byteLength(raw)).toBe(MAX_BODY_BYTES);
    const res = await gateway.api('/api/v1/echo', {
      key,
      rawBody: Buffer.from(raw),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(200);
  });

  it('refuses one byte more with 413 payload_too_large, with or without Content-Length', async () => {
    const raw = Buffer.from(JSON.stringify({ pad: 'x'.repeat(MAX_BODY_BYTES) }));
    const declared = await gateway.api('/api/v1/echo', {
      key,
      rawBody: raw,
      headers: { 'content-type': 'application/json', 'x-request-id': 'big-1' },
    });
    expect(declared.status).toBe(413);
    expect(declared.body).toEqual({ error: 'payload_too_large', message: expect.any(String) });
    expect(declared.headers.get('x-request-id')).toBe('big-1');

    const chunks = Array.from({ length: 5 }, () => Buffer.alloc(512 * 1024, 0x20));
    const streamed = await gateway.api('/api/v1/echo', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      chunks,
    });
    expect(streamed.status).toBe(413);
    expect(streamed.body?.error).toBe('payload_too_large');
  });
});

describe('routing', () => {
  it('answers 404 not_found for unknown paths, inside and outside /api/v1', async () => {
    for (const path of [
      '/nope',
      '/api/v2/app',
      '/api/v1/nope',
      '/api/v1/app/extra',
      '/API/V1/APP',
    ]) {
      const res = await gateway.api(path, { key });
      expect({ path, status: res.status, error: res.body?.error }).toEqual({
        path,
        status: 404,
        error: 'not_found',
      });
      expect(res.headers.get('x-request-id')).toMatch(UUID);
    }
  });

  it('names the unknown path as it was sent, an undecodable one too, without its query', async () => {
    for (const [path, named] of [
      ['/api/v1/nope?x=1', '/api/v1/nope'],
      ['/api/v1/nope/%ZZ', '/api/v1/nope/%ZZ'],
      ['/api/v1/sdk/nope/%ZZ', '/api/v1/sdk/nope/%ZZ'],
      ['/nope/%E0%A4%A', '/nope/%E0%A4%A'],
    ]) {
      const sdk = path.startsWith('/api/v1/sdk');
      const res = await gateway.api(path, { key: sdk ? tenant.publishable.live.secret : key });
      expect({ path, status: res.status, body: res.body }).toEqual({
        path,
        status: 404,
        body: { error: 'not_found', message: `No route for GET ${named}.` },
      });
    }
  });

  it('answers 405 method_not_allowed with Allow for a known path', async () => {
    const res = await gateway.api('/api/v1/app', { key, method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.body).toEqual({ error: 'method_not_allowed', message: expect.any(String) });
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(res.headers.get('x-request-id')).toMatch(UUID);

    const echo = await gateway.api('/api/v1/echo', { key, method: 'PUT', body: {} });
    expect(echo.status).toBe(405);
    expect(echo.headers.get('allow')).toBe('PATCH, POST');

    const options = await gateway.api('/api/v1/app', { key, method: 'OPTIONS' });
    expect(options.status).toBe(405);
    expect(options.headers.get('allow')).toBe('GET, HEAD');

    const probe = await gateway.api('/healthz', { method: 'POST', body: {} });
    expect(probe.status).toBe(405);
    expect(probe.headers.get('allow')).toBe('GET, HEAD');
  });

  it('answers HEAD like GET without a body', async () => {
    const res = await gateway.api('/api/v1/app', { key, method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
  });

  it('ignores a trailing slash', async () => {
    expect((await gateway.api('/api/v1/app/', { key })).status).toBe(200);
  });
});

describe('errors', () => {
  it.each(['/api/v1/throws', '/api/v1/rejects'])(
    'answers an unexpected error on %s with a bare 500 and logs it in full',
    async (path) => {
      const res = await gateway.api(path, { key, headers: { 'x-request-id': 'boom-1' } });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ error: 'internal', message: 'Something went wrong on our side.' });
      expect(res.text).not.toContain('secret_internal_table');
      expect(res.text).not.toContain('at ');
      expect(res.headers.get('x-request-id')).toBe('boom-1');

      const logged = gateway.logs
        .map(
          (line) => JSON.parse(line) as { msg?: string; reqId?: string; err?: { stack?: string } },
        )
        .find((entry) => entry.reqId === 'boom-1' && entry.err !== undefined);
      expect(logged?.err?.stack).toContain('secret_internal_table');
      gateway.logs.length = 0;
    },
  );

  it('passes an ApiError through with its headers', async () => {
    const res = await gateway.api('/api/v1/limited', { key });
    expect(res.status).toBe(429);
    expect(res.body).toEqual({ error: 'rate_limited', message: 'Slow down.' });
    expect(res.headers.get('retry-after')).toBe('42');
  });

  it('carries fields on invalid_request', async () => {
    const res = await gateway.api('/api/v1/invalid', { key });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: 'invalid_request',
      message: 'Some fields are invalid.',
      fields: { alias: 'is taken' },
    });
  });
});

describe('X-Request-Id', () => {
  it('echoes a sane caller id', async () => {
    for (const id of ['a', 'req-123', 'trace:abc.DEF_9', 'x'.repeat(128)]) {
      const res = await gateway.api('/api/v1/app', { key, headers: { 'x-request-id': id } });
      expect(res.headers.get('x-request-id')).toBe(id);
    }
  });

  it('replaces an unsafe or overlong id with a generated one', async () => {
    for (const id of ['x'.repeat(129), 'has space', 'semi;colon', 'ünïcode', '<script>']) {
      const res = await gateway.api('/api/v1/app', {
        key,
        headers: { 'x-request-id': id },
      });
      expect(res.headers.get('x-request-id')).toMatch(UUID);
    }
  });

  it('generates a distinct id per request', async () => {
    const [a, b] = await Promise.all([gateway.api('/healthz'), gateway.api('/healthz')]);
    expect(a.headers.get('x-request-id')).toMatch(UUID);
    expect(a.headers.get('x-request-id')).not.toBe(b.headers.get('x-request-id'));
  });

  it('is on 401s', async () => {
    const res = await gateway.api('/api/v1/app', { headers: { 'x-request-id': 'unauth-1' } });
    expect(res.status).toBe(401);
    expect(res.headers.get('x-request-id')).toBe('unauth-1');
  });
});
