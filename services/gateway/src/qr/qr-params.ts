import type { FieldErrors } from '../http/errors';
import { readQuery } from '../http/query-reader';

/** GET /links/{linkId}/qr's parameters: one table the parser and the API document both read. */
export const QR_FORMATS = ['svg', 'png'] as const;
export type QrFormat = (typeof QR_FORMATS)[number];

/** Error correction: L 7 %, M 15 %, Q 25 %, H 30 % of the code may be damaged and still read. */
export const QR_LEVELS = ['L', 'M', 'Q', 'H'] as const;
export type QrLevel = (typeof QR_LEVELS)[number];

export const QR_SIZE = { min: 64, max: 2048, default: 512 } as const;
/** The quiet zone, in modules; the QR standard asks for 4. */
export const QR_MARGIN = { min: 0, max: 16, default: 4 } as const;
export const QR_DEFAULT_COLOR = '#000000';
export const QR_DEFAULT_BACKGROUND = '#ffffff';
/** WCAG's contrast for graphics (1.4.11); below it cameras in poor light misread modules. */
export const QR_MIN_CONTRAST = 3;

/** The parameters, parsed; colours as `#rrggbb`, lower case. */
export interface QrParams {
  format: QrFormat;
  size: number;
  margin: number;
  level: QrLevel;
  color: string;
  background: string;
}

export type QrParse = { ok: true; params: QrParams } | { ok: false; fields: FieldErrors };

const KNOWN = new Set(['format', 'size', 'margin', 'level', 'color', 'background']);
const HEX = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i;
const COLOR_MESSAGE = 'must be a hex colour, #rrggbb or #rgb';

/** `#rgb` or `#rrggbb` as `#rrggbb`, lower case; undefined for anything else. */
export function hexColorOf(raw: string): string | undefined {
  if (!HEX.test(raw)) return undefined;
  const digits = raw.slice(1).toLowerCase();
  return digits.length === 3 ? `#${digits.replace(/./g, '$&$&')}` : `#${digits}`;
}

/** WCAG 2 relative luminance of `#rrggbb`: 0 for black, 1 for white. */
export function relativeLuminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((at) => {
    const channel = parseInt(hex.slice(at, at + 2), 16) / 255;
    return channel <= 0.04045 ? channel / 12.92 : ((channel + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG 2 contrast ratio of two colours, from 1 (the same) to 21 (black on white). */
export function contrastRatio(a: string, b: string): number {
  const [light, dark] = [relativeLuminance(a), relativeLuminance(b)].sort((x, y) => y - x);
  return (light + 0.05) / (dark + 0.05);
}

/**
 * Why the pair cannot be read reliably, or undefined. Dark modules on a light ground only: many
 * readers (older phones, kiosk scanners) do not try the inverted image, so a light-on-dark code
 * fails there whatever its contrast.
 */
function unreadablePair(color: string, background: string): string | undefined {
  if (relativeLuminance(color) >= relativeLuminance(background)) {
    return 'color must be darker than background: many QR readers cannot read light modules on a dark ground';
  }
  const ratio = contrastRatio(color, background);
  if (ratio < QR_MIN_CONTRAST) {
    // Rounded down: a ratio just under 3 must not read as 3.00.
    const shown = (Math.floor(ratio * 100) / 100).toFixed(2);
    return `color and background contrast ${shown}:1; at least ${QR_MIN_CONTRAST}:1 is needed for the code to scan reliably`;
  }
  return undefined;
}

function integerIn(raw: string, range: { min: number; max: number }): number | undefined {
  const value = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  return value >= range.min && value <= range.max ? value : undefined;
}

/**
 * The query of GET /links/{linkId}/qr, every problem named (a 422's `fields`) as the analytics
 * parameters are: an unknown parameter, a repeated one, a value out of its list or range, and a
 * colour pair that would not scan (named by the colour the caller sent; `color` when both).
 */
export function parseQrQuery(raw: Record<string, unknown>): QrParse {
  const { fields, text } = readQuery(raw, (name) => KNOWN.has(name));

  const formatText = text('format') ?? 'svg';
  const format = QR_FORMATS.find((one) => one === formatText);
  if (!format) fields.format = `must be one of ${QR_FORMATS.join(', ')}`;

  const sizeText = text('size');
  const size = sizeText === undefined ? QR_SIZE.default : integerIn(sizeText, QR_SIZE);
  if (size === undefined) {
    fields.size = `must be an integer from ${QR_SIZE.min} to ${QR_SIZE.max} (pixels)`;
  }

  const marginText = text('margin');
  const margin = marginText === undefined ? QR_MARGIN.default : integerIn(marginText, QR_MARGIN);
  if (margin === undefined) {
    fields.margin = `must be an integer from ${QR_MARGIN.min} to ${QR_MARGIN.max} (modules)`;
  }

  const levelText = text('level') ?? 'M';
  const level = QR_LEVELS.find((one) => one === levelText);
  if (!level) fields.level = `must be one of ${QR_LEVELS.join(', ')}`;

  const colorText = text('color');
  const color = colorText === undefined ? QR_DEFAULT_COLOR : hexColorOf(colorText);
  if (color === undefined) fields.color = COLOR_MESSAGE;
  const backgroundText = text('background');
  const background =
    backgroundText === undefined ? QR_DEFAULT_BACKGROUND : hexColorOf(backgroundText);
  if (background === undefined) fields.background = COLOR_MESSAGE;
  if (color !== undefined && background !== undefined) {
    const problem = unreadablePair(color, background);
    if (problem !== undefined) {
      fields[colorText === undefined && backgroundText !== undefined ? 'background' : 'color'] =
        problem;
    }
  }

  if (
    Object.keys(fields).length > 0 ||
    !format ||
    size === undefined ||
    margin === undefined ||
    !level ||
    color === undefined ||
    background === undefined
  ) {
    return { ok: false, fields };
  }
  return { ok: true, params: { format, size, margin, level, color, background } };
}
