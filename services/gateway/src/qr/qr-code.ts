import { createHash } from 'node:crypto';
import QRCode from 'qrcode';
import type { QrFormat, QrParams } from './qr-params';

/**
 * Part of every ETag: bump it whenever the same text and parameters may draw other bytes (an
 * upgrade of `qrcode`, other renderer options), so no client keeps an image we no longer draw.
 */
export const QR_RENDERING_VERSION = 1;

export const QR_CONTENT_TYPE: Record<QrFormat, string> = {
  svg: 'image/svg+xml',
  png: 'image/png',
};

/** Modules of the largest code (version 40); a size at least this plus the margins always fits. */
const LARGEST_CODE_MODULES = 177;

/**
 * The smallest size that gives each module of the code of `text` a pixel of its own, quiet zone
 * included, when `size` is below it; else undefined. Below it `qrcode` ignores `width` and draws
 * at 4 pixels a module, an image of another size than asked; a long URL at level H with a wide
 * margin needs more than the 64-pixel minimum. Only small sizes pay for the extra encoding.
 */
export function sizeTooSmall(text: string, params: QrParams): number | undefined {
  if (params.size >= LARGEST_CODE_MODULES + 2 * params.margin) return undefined;
  const code = QRCode.create(text, { errorCorrectionLevel: params.level });
  const minimumSize = code.modules.size + 2 * params.margin;
  return params.size < minimumSize ? minimumSize : undefined;
}

/**
 * Draws `text` with the `qrcode` package (encoder, masks and renderers), `size` pixels wide and
 * high; sizeTooSmall() must have passed.
 */
export async function drawQrCode(text: string, params: QrParams): Promise<Buffer> {
  const options = {
    errorCorrectionLevel: params.level,
    margin: params.margin,
    color: { dark: params.color, light: params.background },
  };
  if (params.format === 'svg') {
    const svg = await QRCode.toString(text, { ...options, type: 'svg', width: params.size });
    return Buffer.from(svg, 'utf8');
  }
  // qrcode takes the png's width as floor(modules * (width / modules)), which floating point
  // makes width - 1 for many pairs (512 px over 41 modules is 511 px wide). Half a pixel more
  // lands every pair on the width asked for; the svg writes `width` as given, so it gets none.
  return QRCode.toBuffer(text, { ...options, type: 'png', width: params.size + 0.5 });
}

/**
 * A strong validator of the image: the text it encodes and everything that shapes how it is
 * drawn. Not the link's updatedAt: a link's URL never changes (its alias and host are fixed at
 * creation), so a change to the link draws the same code and keeps the same ETag.
 */
export function qrEtagOf(text: string, params: QrParams): string {
  const { format, size, margin, level, color, background } = params;
  const hash = createHash('sha256')
    .update(
      JSON.stringify([QR_RENDERING_VERSION, text, format, size, margin, level, color, background]),
    )
    .digest('base64url');
  return `"${hash}"`;
}

/**
 * If-None-Match against our ETag, by the weak comparison RFC 9110 (13.1.2) asks of it: `W/`
 * is ignored; `*` matches any image that exists.
 */
export function ifNoneMatchMatches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
