import type { Request, RequestHandler } from 'express';
import express from 'express';
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

/**
 * Runs per matched route (after auth, after 404/405), so nothing is read for a request that is
 * refused anyway. Any body must be a JSON object sent as `application/json`, at most 2 MiB;
 * anything else is 400 `invalid_body` (413 `payload_too_large` past the limit). One middleware,
 * and a request without a body (every GET) never reaches the parser.
 */
export function jsonBody(): RequestHandler {
  return (req, res, next) => {
    if (!carriesBody(req)) {
      next(
        BODY_REQUIRED.has(req.method)
          ? errors.invalidBody('The request needs a JSON object body.')
          : undefined,
      );
      return;
    }
    if (!req.is('application/json')) {
      next(errors.invalidBody('Send the body as JSON with Content-Type: application/json.'));
      return;
    }
    parseJson(req, res, (error?: unknown) => {
      if (error !== undefined) next(error);
      else if (!isJsonObject(req.body))
        next(errors.invalidBody('The request body must be a JSON object.'));
      else next();
    });
  };
}

/** The parsed body of a route that requires one (POST/PUT/PATCH); jsonBody() guaranteed it. */
export function bodyOf(req: Request): JsonObject {
  const body: unknown = req.body;
  if (!isJsonObject(body)) throw errors.invalidBody('The request body must be a JSON object.');
  return body;
}
