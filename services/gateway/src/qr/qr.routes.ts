import type { Request, Response } from 'express';
import { scanUrlOf } from '@linkservice/contracts';
import { combinedLoad } from '../auth/auth.middleware';
import type { GatewayDeps } from '../deps';
import { ApiError, errors } from '../http/errors';
import type { ApiRoute } from '../http/routes';
import { pathParam } from '../http/routes';
import type { QrParams } from './qr-params';
import { parseQrQuery } from './qr-params';
import { QR_CONTENT_TYPE, drawQrCode, ifNoneMatchMatches, qrEtagOf, sizeTooSmall } from './qr-code';
import { getLinkQrDoc } from './qr.openapi';

const NOT_FOUND = 'No such link.';

/**
 * The image is the same for as long as the link exists (its URL is fixed at creation, and the
 * ETag covers every parameter), so a year and `immutable`. `private`, not `public`: the answer
 * needs a secret key, and a shared cache must never hand it to another caller.
 */
export const QR_CACHE_CONTROL = 'private, max-age=31536000, immutable';

function paramsOf(req: Request): QrParams {
  const parsed = parseQrQuery(req.query);
  if (!parsed.ok) throw errors.invalidRequest(parsed.fields);
  return parsed.params;
}

/** 200 with the image, or 304 without a body (`image` undefined); both say how to cache it. */
function sendImage(
  res: Response,
  etag: string,
  image?: { contentType: string; body: Buffer },
): void {
  res.setHeader('ETag', etag);
  res.setHeader('Cache-Control', QR_CACHE_CONTROL);
  if (!image) {
    res.status(304).end();
    return;
  }
  res.status(200);
  res.setHeader('Content-Type', image.contentType);
  res.setHeader('Content-Length', image.body.length);
  res.end(image.body);
}

/** A link's QR code: its URL with the scan marker, for print. */
export function qrRoutes(deps: GatewayDeps): ApiRoute[] {
  const { links } = deps;
  // The link as GET /links/{linkId} reads it: with the key check in one statement, from a
  // replica where that read uses one, and the same 404 for another app's or environment's link.
  const linkById = combinedLoad((keyHash, req) =>
    links.getForKey(keyHash, pathParam(req, 'linkId')),
  );
  return [
    {
      method: 'GET',
      path: '/links/:linkId/qr',
      openapi: getLinkQrDoc,
      authenticatedLoad: linkById.authenticate,
      handler: async (req, res) => {
        const params = paramsOf(req);
        const link = linkById.loadedOf(res);
        if (!link) throw errors.notFound(NOT_FOUND);
        // As the link host answers it. Archived links keep resolving, so they keep their code.
        // No cache headers on the 410: expiresAt can still be moved, and the code come back.
        if (link.status === 'expired') throw new ApiError('expired', 'The link has expired.');

        const text = scanUrlOf(link.url);
        const minimumSize = sizeTooSmall(text, params);
        if (minimumSize !== undefined) {
          throw errors.invalidRequest({
            size: `must be at least ${minimumSize} pixels for this link's code at level ${params.level} with a margin of ${params.margin}: one pixel per module`,
          });
        }
        const etag = qrEtagOf(text, params);
        if (ifNoneMatchMatches(req.get('if-none-match'), etag)) {
          sendImage(res, etag);
          return;
        }
        const body = await drawQrCode(text, params);
        sendImage(res, etag, { contentType: QR_CONTENT_TYPE[params.format], body });
      },
    },
  ];
}
