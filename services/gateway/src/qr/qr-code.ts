import { createHash } from 'node:crypto';
import { PNG } from 'pngjs';
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
  return drawPng(QRCode.create(text, { errorCorrectionLevel: params.level }).modules, params);
}

/** The `#rrggbb` colour as its three bytes. */
function rgbOf(hex: string): [number, number, number] {
  return [1, 3, 5].map((at) => parseInt(hex.slice(at, at + 2), 16)) as [number, number, number];
}

/**
 * The png of a code's modules (qrcode's encoder), `size` pixels square, as qrcode's own png
 * renderer maps pixels to modules (a pixel takes the module under its top-left corner, the
 * quiet zone `margin` modules wide), but a pixel row is drawn once per module row and copied
 * to the rows that repeat it, and written RGB without filters, which zlib deflates at once
 * (rows repeat). qrcode's renderer computed every pixel of an RGBA image and tried five filters
 * per row: 24-40 ms of the event loop for a 512-pixel code, against 5-8 ms here (2048 pixels:
 * about 50 ms).
 */
function drawPng(modules: QRCode.BitMatrix, params: QrParams): Buffer {
  const { size } = params;
  const count = modules.size + 2 * params.margin;
  const scale = size / count;
  const quiet = params.margin * scale;
  const [dark, light] = [rgbOf(params.color), rgbOf(params.background)];
  // Which module row or column a pixel shows, or -1 in the quiet zone.
  const moduleAt = (pixel: number): number =>
    pixel < quiet || pixel >= size - quiet
      ? -1
      : Math.min(modules.size - 1, Math.floor((pixel - quiet) / scale));
  const columns = Array.from({ length: size }, (_, x) => moduleAt(x));
  const rowBytes = size * 3;
  const rows = new Map<number, Buffer>();
  const rowOf = (moduleRow: number): Buffer => {
    let row = rows.get(moduleRow);
    if (row) return row;
    row = Buffer.alloc(rowBytes);
    for (let x = 0; x < size; x++) {
      const column = columns[x];
      const on = moduleRow >= 0 && column >= 0 && modules.get(moduleRow, column) !== 0;
      const [r, g, b] = on ? dark : light;
      row[x * 3] = r;
      row[x * 3 + 1] = g;
      row[x * 3 + 2] = b;
    }
    rows.set(moduleRow, row);
    return row;
  };
  const image = Buffer.alloc(rowBytes * size);
  for (let y = 0; y < size; y++) rowOf(moduleAt(y)).copy(image, y * rowBytes);
  const png = new PNG({ width: size, height: size, inputColorType: 2, inputHasAlpha: false });
  png.data = image;
  return PNG.sync.write(png, {
    colorType: 2,
    inputColorType: 2,
    inputHasAlpha: false,
    filterType: 0,
    deflateLevel: 1,
  });
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
