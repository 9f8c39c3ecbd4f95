import { createHash } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';
import QRCode from 'qrcode';
import type { QrFormat, QrParams } from './qr-params';

/**
 * Part of every ETag: bump it whenever the same text and parameters may draw other bytes (an
 * upgrade of `qrcode`, other renderer options), so no client keeps an image we no longer draw.
 */
export const QR_RENDERING_VERSION = 2;

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

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** One png chunk: length, type, data, CRC-32 of type and data. */
function pngChunk(type: string, data: Buffer): Buffer {
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  chunk.write(type, 4, 'latin1');
  data.copy(chunk, 8);
  chunk.writeUInt32BE(crc32(chunk.subarray(4, 8 + data.length)), 8 + data.length);
  return chunk;
}

/**
 * The png of a code's modules (qrcode's encoder), `size` pixels square, as qrcode's own png
 * renderer maps pixels to modules (a pixel takes the module under its top-left corner, the
 * quiet zone `margin` modules wide), written as a two-colour palette image of one bit per
 * pixel (index 0 the background, 1 the colour), rows without filters. Decoders give the very
 * pixels an RGB image would; the image is 1/24 of RGB's bytes before deflate, so a 2048-pixel
 * code holds about 0.5 MB while it is drawn instead of 25 MB, and deflate has 24 times less to
 * read. A pixel row is drawn once per module row and copied to the rows that repeat it.
 */
function drawPng(modules: QRCode.BitMatrix, params: QrParams): Buffer {
  const { size } = params;
  const count = modules.size + 2 * params.margin;
  const scale = size / count;
  const quiet = params.margin * scale;
  // Which module row or column a pixel shows, or -1 in the quiet zone.
  const moduleAt = (pixel: number): number =>
    pixel < quiet || pixel >= size - quiet
      ? -1
      : Math.min(modules.size - 1, Math.floor((pixel - quiet) / scale));
  const columns = Array.from({ length: size }, (_, x) => moduleAt(x));
  // Each row: its filter byte (0, none), then the pixels, 8 a byte, the first in the high bit.
  const rowBytes = 1 + Math.ceil(size / 8);
  const rows = new Map<number, Buffer>();
  const rowOf = (moduleRow: number): Buffer => {
    let row = rows.get(moduleRow);
    if (row) return row;
    row = Buffer.alloc(rowBytes);
    if (moduleRow >= 0) {
      for (let x = 0; x < size; x++) {
        const column = columns[x];
        if (column >= 0 && modules.get(moduleRow, column) !== 0)
          row[1 + (x >> 3)] |= 0x80 >> (x & 7);
      }
    }
    rows.set(moduleRow, row);
    return row;
  };
  const image = Buffer.alloc(rowBytes * size);
  for (let y = 0; y < size; y++) rowOf(moduleAt(y)).copy(image, y * rowBytes);

  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  // Bit depth 1, colour type 3 (palette); compression, filter and interlace methods 0.
  header.set([1, 3, 0, 0, 0], 8);
  const palette = Buffer.from([...rgbOf(params.background), ...rgbOf(params.color)]);
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', header),
    pngChunk('PLTE', palette),
    pngChunk('IDAT', deflateSync(image)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
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
