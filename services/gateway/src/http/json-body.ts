import { AsyncResource } from 'node:async_hooks';
import type { Request, RequestHandler, Response } from 'express';
import express from 'express';
import { LINK_INPUT_LIMITS } from '@linkservice/contracts';
import type { ApiError } from './errors';
import { afterBody } from './request-budget';
import { errors } from './errors';
import { nestsDeeperThan } from './json-depth';

export const MAX_BODY_BYTES = 2 * 1024 * 1024;

/**
 * How deep objects and arrays may nest in a body, the body itself being level 1. Code that walks
 * a body by recursion (the Idempotency-Key's canonical form, JSON.stringify, the field rules)
 * then stays far from the stack's end, so no valid body turns into a 500; and no sensible
 * deepLinkData comes near it (it has 127 levels in POST /links and PATCH, 125 in a batch entry).
 */
export const MAX_BODY_DEPTH = LINK_INPUT_LIMITS.bodyDepth;

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

/** The body rules of jsonBody(), ending in `done(error?)`. */
function readBody(
  req: Request,
  res: Response,
  done: (error?: unknown) => void,
  optional = false,
): void {
  if (!carriesBody(req)) {
    done(
      BODY_REQUIRED.has(req.method) && !optional
        ? errors.invalidBody('The request needs a JSON object body.')
        : undefined,
    );
    return;
  }
  if (!req.is('application/json')) {
    done(errors.invalidBody('Send the body as JSON with Content-Type: application/json.'));
    return;
  }
  // The parser calls back from the request stream's 'end', in the socket's async context: bind
  // the callback to this one, so what follows keeps the request's context, and give it the
  // request's Postgres budget afresh (request-budget.ts): the upload took the client's time.
  parseJson(
    req,
    res,
    AsyncResource.bind((error?: unknown) => {
      afterBody(req, () => {
        if (error !== undefined) done(undecodableBody(req, error) ?? error);
        else if (!isJsonObject(req.body))
          done(errors.invalidBody('The request body must be a JSON object.'));
        else if (nestsDeeperThan(req.body, MAX_BODY_DEPTH)) {
          done(
            errors.invalidBody(
              `The request body nests objects and arrays more than ${MAX_BODY_DEPTH} levels deep.`,
            ),
          );
        } else done();
      });
    }),
  );
}

/**
 * Runs per matched route (after auth, after 404/405), so nothing is read for a request that is
 * refused anyway. Any body must be a JSON object sent as `application/json`, at most 2 MiB and
 * nested at most MAX_BODY_DEPTH levels; anything else is 400 `invalid_body` (413
 * `payload_too_large` past the size). One middleware,
 * and a request without a body (every GET) never reaches the parser. A body an authenticated
 * load already read (readJsonBody) is not read again: its outcome is answered as it was found.
 * `optional`: a POST, PUT or PATCH may come without a body too (a route's `bodyOptional`).
 */
export function jsonBody(options: { optional?: boolean } = {}): RequestHandler {
  return (req, res, next) => {
    const earlier = bodyReads.get(req);
    if (earlier) next(earlier.ok ? undefined : earlier.error);
    else readBody(req, res, next, options.optional);
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
