import { AsyncResource } from 'node:async_hooks';
import type { Request, RequestHandler, Response } from 'express';
import express from 'express';
import type { ApiError } from './errors';
import { afterBody } from './request-budget';
import { errors } from './errors';

export const MAX_BODY_BYTES = 2 * 1024 * 1024;

export type JsonObject = Record<string, unknown>;

/** Methods whose requests must carry a JSON object; on the others a body is optional. */
const BODY_REQUIRED = new Set(['POST', 'PUT', 'PATCH']);

const parseJson: RequestHandler = express.json({
  limit: MAX_BODY_BYTES,
  strict: true,
  type: 'application/json',
});

function carriesBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** How reading a request's body went: the JSON object (none for a GET), or why it was refused. */
export type BodyRead = { ok: true; body: JsonObject | undefined } | { ok: false; error: unknown };

/** Each request's body is read once; a second reader gets the first outcome. */
const bodyReads = new WeakMap<Request, BodyRead>();

/**
 * body-parser decodes gzip, deflate and br bodies (zstd too where node has it) before parsing.
 * A body that does not decode as its Content-Encoding says comes back as the decoder's own error:
 * a zlib or brotli `code` (Z_DATA_ERROR, Z_BUF_ERROR, ERR__ERROR_FORMAT_…) and none of
 * body-parser's `type`s, which every other reading failure carries. Nothing was read: 400.
 */
function undecodableBody(req: Request, error: unknown): ApiError | undefined {
  const encoding = req.headers['content-encoding']?.trim().toLowerCase();
  if (encoding === undefined || encoding === '' || encoding === 'identity') return undefined;
  const { type, code } = (error ?? {}) as { type?: unknown; code?: unknown };
  if (type !== undefined || typeof code !== 'string') return undefined;
  return errors.invalidBody('The request body does not decode as its Content-Encoding says.');
}

/** What every JSON client sends: read by readPlainJson() without the general parser's work. */
const PLAIN_JSON_TYPE = /^application\/json(?:; *charset=(?:"utf-8"|utf-8))?$/i;

/**
 * The body is the common case (Content-Type application/json, UTF-8 if a charset is named, no
 * Content-Encoding, a Content-Length within the limit): readPlainJson() reads it. Anything else
 * goes through body-parser, which knows every other case.
 */
function isPlainJson(req: Request): boolean {
  const type = req.headers['content-type'];
  const encoding = req.headers['content-encoding'];
  const length = req.headers['content-length'];
  return (
    type !== undefined &&
    PLAIN_JSON_TYPE.test(type) &&
    (encoding === undefined || encoding.toLowerCase() === 'identity') &&
    req.headers['transfer-encoding'] === undefined &&
    length !== undefined &&
    /^\d{1,7}$/.test(length) &&
    Number(length) <= MAX_BODY_BYTES
  );
}

/** A reading failure as body-parser reports it: error-handler.ts answers by its `type`. */
function readFailure(type: string, message: string): Error {
  return Object.assign(new Error(message), { status: 400, type });
}

/**
 * body-parser's outcome for a plain JSON body (isPlainJson), without its per-request work
 * (content-type and charset parsing, the decoder, the size and encoding checks that cannot fail
 * here): the bytes as UTF-8 without a leading BOM, strict JSON (an object or array at the top, an
 * empty body is {}), `req.body` set, `done()`; or `done(error)` with body-parser's `type`.
 */
function readPlainJson(req: Request, done: (error?: unknown) => void): void {
  const expected = Number(req.headers['content-length']);
  const chunks: Buffer[] = [];
  let received = 0;
  let settled = false;
  const settle = (error?: unknown): void => {
    if (settled) return;
    settled = true;
    req.removeListener('data', onData);
    req.removeListener('end', onEnd);
    req.removeListener('error', onError);
    req.removeListener('close', onClose);
    done(error);
  };
  function onData(chunk: Buffer): void {
    received += chunk.length;
    chunks.push(chunk);
  }
  function onEnd(): void {
    if (received !== expected) {
      settle(readFailure('request.size.invalid', 'request size did not match content length'));
      return;
    }
    let text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received))?.toString(
      'utf8',
    );
    if (text?.charCodeAt(0) === 0xfeff) text = text.slice(1);
    try {
      req.body = parseStrictJson(text ?? '');
    } catch (error) {
      settle(
        readFailure('entity.parse.failed', error instanceof Error ? error.message : 'bad JSON'),
      );
      return;
    }
    settle();
  }
  function onError(error: Error): void {
    settle(readFailure('request.aborted', error.message));
  }
  function onClose(): void {
    settle(readFailure('request.aborted', 'request aborted'));
  }
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
  req.on('close', onClose);
}

/** body-parser's strict JSON: `{}` for nothing, else an object or array at the top. */
function parseStrictJson(text: string): unknown {
  if (text.length === 0) return {};
  const first = /^[\x20\x09\x0a\x0d]*([^\x20\x09\x0a\x0d]|$)/.exec(text)?.[1];
  if (first !== '{' && first !== '[') throw new SyntaxError('strict violation');
  return JSON.parse(text);
}

/** The body rules of jsonBody(), ending in `done(error?)`. */
function readBody(req: Request, res: Response, done: (error?: unknown) => void): void {
  if (!carriesBody(req)) {
    done(
      BODY_REQUIRED.has(req.method)
        ? errors.invalidBody('The request needs a JSON object body.')
        : undefined,
    );
    return;
  }
  const plain = isPlainJson(req);
  if (!plain && !req.is('application/json')) {
    done(errors.invalidBody('Send the body as JSON with Content-Type: application/json.'));
    return;
  }
  // The body arrives in callbacks from the request stream, in the socket's async context: bind
  // the callback to this one, so what follows keeps the request's context, and give it the
  // request's Postgres budget afresh (request-budget.ts): the upload took the client's time.
  const parsed = AsyncResource.bind((error?: unknown) => {
    afterBody(req, () => {
      if (error !== undefined) done(undecodableBody(req, error) ?? error);
      else if (!isJsonObject(req.body))
        done(errors.invalidBody('The request body must be a JSON object.'));
      else done();
    });
  });
  if (plain) readPlainJson(req, parsed);
  else parseJson(req, res, parsed);
}

/**
 * Runs per matched route (after auth, after 404/405), so nothing is read for a request that is
 * refused anyway. Any body must be a JSON object sent as `application/json`, at most 2 MiB;
 * anything else is 400 `invalid_body` (413 `payload_too_large` past the limit). One middleware,
 * and a request without a body (every GET) never reaches the parser. A body an authenticated
 * load already read (readJsonBody) is not read again: its outcome is answered as it was found.
 */
export function jsonBody(): RequestHandler {
  return (req, res, next) => {
    const earlier = bodyReads.get(req);
    if (earlier) next(earlier.ok ? undefined : earlier.error);
    else readBody(req, res, next);
  };
}

/**
 * jsonBody()'s rules, with the outcome as a value instead of an answer: for an authenticated
 * load whose one statement depends on the body (the SDK's resolve), which must still answer a
 * bad key with 401 before anything about the body. jsonBody() later answers a refused body.
 */
export function readJsonBody(req: Request, res: Response): Promise<BodyRead> {
  const earlier = bodyReads.get(req);
  if (earlier) return Promise.resolve(earlier);
  return new Promise((resolve) => {
    readBody(req, res, (error?: unknown) => {
      const read: BodyRead =
        error === undefined
          ? { ok: true, body: isJsonObject(req.body) ? req.body : undefined }
          : { ok: false, error };
      bodyReads.set(req, read);
      resolve(read);
    });
  });
}

/** The parsed body of a route that requires one (POST/PUT/PATCH); jsonBody() guaranteed it. */
export function bodyOf(req: Request): JsonObject {
  const body: unknown = req.body;
  if (!isJsonObject(body)) throw errors.invalidBody('The request body must be a JSON object.');
  return body;
}
