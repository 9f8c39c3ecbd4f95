/**
 * The scan marker: a link's QR code encodes the link URL with `qr=1` in its query, so the link
 * host can tell a scan from a tap of the plain URL (analytics `source: qr`). The marker is ours:
 * it is stripped before the query goes anywhere else (the fallback's query passthrough, the UTM
 * values, the app's `query` in resolve).
 */
export const QR_SCAN_PARAMETER = 'qr';
export const QR_SCAN_VALUE = '1';

const MARKER = `${QR_SCAN_PARAMETER}=${QR_SCAN_VALUE}`;
const AMPERSAND = 0x26;

/** A raw query read for the scan marker. */
export interface ScanMarkerRead {
  /** The query carried at least one `qr=1` pair. */
  scanned: boolean;
  /** The query without its `qr=1` pairs, every other pair byte for byte and in order. */
  query: string;
}

/** Whether the MARKER found at `at` is a whole pair of `query` (not `xqr=1` or `qr=10`). */
function isWholePair(query: string, at: number): boolean {
  const end = at + MARKER.length;
  return (
    (at === 0 || query.charCodeAt(at - 1) === AMPERSAND) &&
    (end === query.length || query.charCodeAt(end) === AMPERSAND)
  );
}

/**
 * Reads a raw query (as sent, without `?`) for the scan marker: a pair that is exactly `qr=1`.
 * The same name with another value (`qr=10`, `qr`, `qr=`) is not the marker and is kept, and so
 * is an escaped spelling (`q%72=1`, `qr=%31`): the QR code carries the literal pair, and
 * decoding every pair would cost every redirect. A query without the marker (nearly every tap)
 * is searched once and returned as it is; one with it loses each marker pair and one `&` next
 * to it (pairs are split on `&` and joined again, so empty pairs between others stay).
 */
export function readScanMarker(query: string): ScanMarkerRead {
  let at = query.indexOf(MARKER);
  while (at !== -1 && !isWholePair(query, at)) at = query.indexOf(MARKER, at + 1);
  if (at === -1) return { scanned: false, query };
  const kept = query.split('&').filter((pair) => pair !== MARKER);
  return { scanned: true, query: kept.join('&') };
}

/** The URL a link's QR code encodes: its URL with the scan marker as its query. */
export function scanUrlOf(linkUrl: string): string {
  return `${linkUrl}${linkUrl.includes('?') ? '&' : '?'}${MARKER}`;
}
