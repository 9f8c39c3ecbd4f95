import { QR_SCAN_PARAMETER, QR_SCAN_VALUE, readScanMarker, scanUrlOf } from './qr-scan';

describe('readScanMarker', () => {
  it('is the literal pair qr=1', () => {
    expect(`${QR_SCAN_PARAMETER}=${QR_SCAN_VALUE}`).toBe('qr=1');
  });

  it.each([
    ['', false, ''],
    ['utm_source=mail', false, 'utm_source=mail'],
    ['qr=1', true, ''],
    ['qr=1&utm_source=mail', true, 'utm_source=mail'],
    ['a=1&qr=1&b=2', true, 'a=1&b=2'],
    ['a=1&b=2&qr=1', true, 'a=1&b=2'],
    ['qr=1&a=1&qr=1&b=2&qr=1', true, 'a=1&b=2'],
    ['qr=1&qr=1', true, ''],
    // Not the marker: kept as sent.
    ['qr=10', false, 'qr=10'],
    ['qr=1x&b=2', false, 'qr=1x&b=2'],
    ['xqr=1', false, 'xqr=1'],
    ['aqr=1&qr=2', false, 'aqr=1&qr=2'],
    ['qr', false, 'qr'],
    ['qr=', false, 'qr='],
    ['QR=1', false, 'QR=1'],
    ['qr=0', false, 'qr=0'],
    ['q%72=1', false, 'q%72=1'],
    ['qr=%31', false, 'qr=%31'],
    ['qr%3D1', false, 'qr%3D1'],
    ['next=%3Fqr%3D1', false, 'next=%3Fqr%3D1'],
    // A value that contains the marker's text is not the marker either.
    ['ref=a.qr=1', false, 'ref=a.qr=1'],
    ['qr=10&qr=1', true, 'qr=10'],
    ['xqr=1&qr=1&c=%20d+e', true, 'xqr=1&c=%20d+e'],
    // Every other pair byte for byte, empty ones included.
    ['a=%E2%82%AC&&qr=1&b', true, 'a=%E2%82%AC&&b'],
    ['qr=1&', true, ''],
    ['&qr=1', true, ''],
  ])('%j: scanned %s, query %j', (query, scanned, rest) => {
    expect(readScanMarker(query)).toEqual({ scanned, query: rest });
  });

  it('returns a query without the marker as the same string', () => {
    const query = 'utm_source=mail&qr=10&ref=qr=1x';
    expect(readScanMarker(query).query).toBe(query);
  });
});

describe('scanUrlOf', () => {
  it('adds the scan marker as the query of a link URL', () => {
    expect(scanUrlOf('https://acme.go.example/Promo')).toBe('https://acme.go.example/Promo?qr=1');
  });

  it('appends it to a query already there, and readScanMarker takes it back out', () => {
    const scanned = scanUrlOf('https://acme.go.example/Promo?a=b');
    expect(scanned).toBe('https://acme.go.example/Promo?a=b&qr=1');
    expect(readScanMarker(scanned.split('?')[1] ?? '')).toEqual({ scanned: true, query: 'a=b' });
  });
});
