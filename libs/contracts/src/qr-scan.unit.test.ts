import { QR_SCAN_PARAMETER, QR_SCAN_VALUE, scanUrlOf } from './qr-scan';

describe('scanUrlOf', () => {
  it('adds the scan marker as the query of a link URL', () => {
    expect(`${QR_SCAN_PARAMETER}=${QR_SCAN_VALUE}`).toBe('qr=1');
    expect(scanUrlOf('https://acme.go.example/Promo')).toBe('https://acme.go.example/Promo?qr=1');
  });

  it('appends it to a query already there', () => {
    expect(scanUrlOf('https://acme.go.example/Promo?a=b')).toBe(
      'https://acme.go.example/Promo?a=b&qr=1',
    );
  });
});
