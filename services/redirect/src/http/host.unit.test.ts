import { requestHost } from './host';

describe('requestHost', () => {
  const headers = { host: 'internal:8081', 'x-forwarded-host': 'acme.links.example.com, proxy' };

  it('uses Host unless X-Forwarded-Host is trusted', () => {
    expect(requestHost(headers, false)).toBe('internal:8081');
  });

  it('uses the first X-Forwarded-Host value when trusted', () => {
    expect(requestHost(headers, true)).toBe('acme.links.example.com');
  });

  it('falls back to Host when trusted but absent', () => {
    expect(requestHost({ host: 'acme.links.example.com' }, true)).toBe('acme.links.example.com');
  });
});
