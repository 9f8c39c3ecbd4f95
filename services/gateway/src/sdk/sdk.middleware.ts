import cors from 'cors';
import type { Request, RequestHandler } from 'express';
import { besideKeyCheck } from '../auth/auth.middleware';
import { ApiError, errors } from '../http/errors';
import { REQUEST_ID_HEADER } from '../http/request-id';
import type { SdkLimiter } from '../limits/sdk-limiter';

/**
 * Every SDK answer, errors and preflights included, is `no-store`: a resolve's deepLinkData is
 * the caller's, and a shared cache must never hand it (or a 401, 404 or 429) to another app user.
 */
export function noStore(): RequestHandler {
  return (_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  };
}

/**
 * CORS for apps built on web views (and web SDKs): any origin, since a publishable key is
 * public anyway and is sent as a header, never as a cookie (no credentials). A preflight is
 * answered here, before the key is read, as browsers send it without Authorization.
 */
export function sdkCors(): RequestHandler {
  return cors({
    origin: '*',
    methods: ['POST', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Install-Secret', REQUEST_ID_HEADER],
    exposedHeaders: [REQUEST_ID_HEADER, 'Retry-After'],
    // How long a browser may reuse a preflight's answer for the same URL (Chromium caps it at 2 h).
    maxAge: 600,
  });
}

/** The address a budget belongs to: express's `req.ip`, which follows TRUST_PROXY. */
function clientAddressOf(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? '';
}

/**
 * The abuse limit of every SDK request, begun beside the key's lookup (after readBearerKey()).
 * Only a good key hears it: 429 `rate_limited` with Retry-After over the limit, 503 when Redis
 * does not answer (the limit cannot be kept, so nothing is served; like the creation limit).
 */
export function sdkAbuseLimit(limiter: SdkLimiter): RequestHandler {
  return besideKeyCheck(async (req, key) => {
    const verdict = await limiter
      .consume(key.hash, clientAddressOf(req))
      .catch((error: unknown) => {
        throw errors.unavailable(undefined, error);
      });
    if (!verdict.allowed) {
      throw new ApiError(
        'rate_limited',
        `Too many requests with this key from this address; retry in ${verdict.retryAfterSeconds} s.`,
        { headers: { 'Retry-After': String(verdict.retryAfterSeconds) } },
      );
    }
  });
}
