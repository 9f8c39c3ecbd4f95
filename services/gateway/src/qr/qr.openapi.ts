import { z } from 'zod';
import type { ZodOpenApiOperationObject } from 'zod-openapi';
import { QR_SCAN_PARAMETER, QR_SCAN_VALUE } from '@linkservice/contracts';
import { errorAnswer } from '../openapi/responses';
import {
  QR_DEFAULT_BACKGROUND,
  QR_DEFAULT_COLOR,
  QR_FORMATS,
  QR_LEVELS,
  QR_MARGIN,
  QR_MIN_CONTRAST,
  QR_SIZE,
} from './qr-params';

const linkIdParam = z.object({
  linkId: z.string().meta({
    description:
      "The link id. A link of another app, or of the key's other environment, is 404 like an unknown id.",
    example: 'lnk_01JQ3Z6Y8N4T7K2M5P9R0S1V3W',
  }),
});

const hexColor = (description: string, example: string) =>
  z
    .string()
    .regex(/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/)
    .optional()
    .meta({ description, example });

export const qrQuerySchema = z.object({
  format: z.enum(QR_FORMATS).optional().meta({ description: 'The image format (default `svg`).' }),
  size: z
    .int()
    .min(QR_SIZE.min)
    .max(QR_SIZE.max)
    .optional()
    .meta({
      description: `Width and height of the image in pixels (default ${QR_SIZE.default}): the png's pixels, the svg's \`width\` and \`height\`. It must give each module a pixel at least; a long URL at level \`H\` with a wide margin needs more than ${QR_SIZE.min} (the 422 says how many).`,
    }),
  margin: z
    .int()
    .min(QR_MARGIN.min)
    .max(QR_MARGIN.max)
    .optional()
    .meta({
      description: `The quiet zone around the code, in modules (default ${QR_MARGIN.default}, as the QR standard asks).`,
    }),
  level: z.enum(QR_LEVELS).optional().meta({
    description:
      'Error correction: `L` 7 %, `M` 15 % (default), `Q` 25 %, `H` 30 % of the code may be damaged (or covered by a logo) and still read.',
  }),
  color: hexColor(
    `The modules' colour, \`#rrggbb\` or \`#rgb\` (default \`${QR_DEFAULT_COLOR}\`). It must be darker than \`background\` and contrast with it at least ${QR_MIN_CONTRAST}:1 (WCAG contrast ratio), else 422.`,
    '#1a237e',
  ),
  background: hexColor(
    `The background's colour, \`#rrggbb\` or \`#rgb\` (default \`${QR_DEFAULT_BACKGROUND}\`).`,
    '#ffffff',
  ),
});

const cacheHeaders = z.object({
  ETag: z.string().meta({
    description:
      'A strong validator of the image: the same link and parameters always draw the same image.',
    example: '"n0Bq7tXrV5l9kQ2m8zY1cW4pJ6hR3sD0fG8aE5uI7oL"',
  }),
  'Cache-Control': z.literal('private, max-age=31536000, immutable').meta({
    description:
      'The image never changes; `private` because it is answered to a secret key only: no shared cache may keep it.',
  }),
});

export const getLinkQrDoc: ZodOpenApiOperationObject = {
  operationId: 'getLinkQr',
  summary: "A link's QR code",
  description: `The link's QR code, for print. It encodes the link's \`url\` with the scan marker \`?${QR_SCAN_PARAMETER}=${QR_SCAN_VALUE}\`, by which the link host counts the visit as a scan; the marker is stripped before the query is passed on. Archived links keep their code (they keep resolving). The image of a link and parameters never changes: send its ETag as \`If-None-Match\` to get a 304.`,
  tags: ['Links'],
  requestParams: { path: linkIdParam, query: qrQuerySchema },
  responses: {
    '200': {
      description: 'The QR code: an SVG document (`format=svg`) or a PNG image (`format=png`).',
      headers: cacheHeaders,
      content: {
        'image/svg+xml': { schema: z.string().meta({ description: 'An SVG document.' }) },
        'image/png': {
          schema: z.string().meta({ format: 'binary', description: 'A PNG image.' }),
        },
      },
    },
    '304': {
      description:
        '`If-None-Match` named the current ETag: the image the caller has is current; no body.',
      headers: cacheHeaders,
    },
    '404': errorAnswer(
      'not_found',
      'no such link in the app and environment of the key.',
      'No such link.',
    ),
    '410': errorAnswer(
      'expired',
      'the link has expired; it has no code (the link host answers it with 410 too).',
      'The link has expired.',
    ),
    '422': errorAnswer(
      'invalid_request',
      'an unknown or repeated parameter, a value out of its list or range, an unreadable colour pair (named by `color`, or by `background` when only it was sent), or a `size` too small for the code; `fields` names each.',
      'Some fields are invalid.',
      { fields: 'with' },
    ),
  },
};
