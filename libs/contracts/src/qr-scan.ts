/**
 * The scan marker: a link's QR code encodes its URL with `?qr=1`, so the link host can tell a
 * scan from a tap (and strips the marker before the query goes on). One definition for the
 * gateway that draws the code and the link host that reads it.
 */
export const QR_SCAN_PARAMETER = 'qr';
export const QR_SCAN_VALUE = '1';

/** The URL a link's QR code encodes: its URL with the scan marker as its query. */
export function scanUrlOf(linkUrl: string): string {
  return `${linkUrl}${linkUrl.includes('?') ? '&' : '?'}${QR_SCAN_PARAMETER}=${QR_SCAN_VALUE}`;
}
