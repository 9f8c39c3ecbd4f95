import { parseLinkHost, requestHost } from './host';

const domain = 'links.example.com';

describe('parseLinkHost', () => {
  it.each([
    ['acme.links.example.com', { subdomainKey: 'acme', environment: 'live' }],
    ['acme-test.links.example.com', { subdomainKey: 'acme', environment: 'test' }],
    ['ACME.Links.Example.COM', { subdomainKey: 'acme', environment: 'live' }],
    ['acme.links.example.com:8081', { subdomainKey: 'acme', environment: 'live' }],
    ['acme-test.links.example.com:443', { subdomainKey: 'acme', environment: 'test' }],
    ['acme.links.example.com.', { subdomainKey: 'acme', environment: 'live' }],
    ['my-app.links.example.com', { subdomainKey: 'my-app', environment: 'live' }],
    ['my-app-test.links.example.com', { subdomainKey: 'my-app', environment: 'test' }],
  ])('%s is a link host', (host, expected) => {
    expect(parseLinkHost(host, domain)).toEqual(expected);
  });

  it.each([
    [undefined],
    [''],
    ['links.example.com'],
    ['.links.example.com'],
    ['-test.links.example.com'],
    ['a.b.links.example.com'],
    ['acme.links.example.org'],
    ['acmelinks.example.com'],
    ['acme.xlinks.example.com'],
    ['127.0.0.1:8081'],
    ['[::1]:8081'],
    ['localhost'],
    ['ab.links.example.com'], // too short for a subdomain key
    ['acme-.links.example.com'],
    ['acme-test-test.links.example.com'], // no subdomain key ends in -test
    ['ac_me.links.example.com'],
    ['acme.links.example.com:http'],
  ])('%s is not a link host', (host) => {
    expect(parseLinkHost(host, domain)).toBeNull();
  });
});

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
