import { aliasFromPath, linkUrlFor, parseLinkHost, parseLinkUrl } from './link-url';

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

describe('aliasFromPath', () => {
  it.each([
    ['/Promo', 'Promo'],
    ['/promo_2024-x', 'promo_2024-x'],
    ['/0abc', '0abc'],
    ['/%50romo', 'Promo'], // escaped unreserved characters are the same characters
    ['/a%2Db', 'a-b'],
    [`/${'a'.repeat(128)}`, 'a'.repeat(128)],
  ])('%s names %s', (path, alias) => {
    expect(aliasFromPath(path)).toBe(alias);
  });

  it.each([
    ['/'],
    ['/Promo/'],
    ['/a/b'],
    ['/-promo'],
    ['/_promo'],
    ['/pro.mo'],
    ['/pro%2Fmo'],
    ['/pro%20mo'],
    ['/%zz'],
    ['/%'],
    ['/caf%C3%A9'],
    [`/${'a'.repeat(129)}`],
    ['/.well-known/assetlinks.json'],
  ])('%s names no alias', (path) => {
    expect(aliasFromPath(path)).toBeNull();
  });
});

describe('linkUrlFor', () => {
  it('puts a live link on the live host and a test link on the -test host', () => {
    expect(linkUrlFor('acme', 'live', 'Promo', domain)).toBe(
      'https://acme.links.example.com/Promo',
    );
    expect(linkUrlFor('acme', 'test', 'Promo', domain)).toBe(
      'https://acme-test.links.example.com/Promo',
    );
  });
});

describe('parseLinkUrl', () => {
  it.each([
    ['https://acme.links.example.com/Promo', 'live', {}],
    ['http://acme.links.example.com/Promo', 'live', {}],
    ['https://acme-test.links.example.com/Promo', 'test', {}],
    ['https://ACME.links.example.com:8443/Promo#section', 'live', {}],
    ['https://acme.links.example.com/Promo?a=1&b=2&a=3#x', 'live', { a: '3', b: '2' }],
    [
      'https://acme.links.example.com/Promo?q=caf%C3%A9+au+lait&empty=',
      'live',
      { q: 'café au lait', empty: '' },
    ],
    ['https://acme.links.example.com/%50romo', 'live', {}],
    // The scan marker of a QR code's URL is the link host's: never in the app's query.
    ['https://acme.links.example.com/Promo?qr=1', 'live', {}],
    ['https://acme.links.example.com/Promo?a=1&qr=1#x', 'live', { a: '1' }],
    ['https://acme.links.example.com/Promo?qr=1&ls_click=t&qr=1', 'live', { ls_click: 't' }],
    ['https://acme.links.example.com/Promo?qr=2&qr=1', 'live', { qr: '2' }],
    ['https://acme.links.example.com/Promo?qr=10', 'live', { qr: '10' }],
  ])('%s names Promo on the %s host', (url, environment, query) => {
    expect(parseLinkUrl(url, domain)).toEqual({
      host: { subdomainKey: 'acme', environment },
      alias: 'Promo',
      query,
    });
  });

  it('keeps a parameter named __proto__ as a plain parameter', () => {
    const parsed = parseLinkUrl('https://acme.links.example.com/Promo?__proto__=x&a=1', domain);
    expect(parsed?.query).toEqual(JSON.parse('{"__proto__":"x","a":"1"}'));
    expect(Object.keys(parsed?.query ?? {})).toEqual(['__proto__', 'a']);
  });

  it.each([
    [''],
    ['not a url'],
    ['/Promo'],
    ['acme.links.example.com/Promo'],
    ['ftp://acme.links.example.com/Promo'],
    ['myapp://acme.links.example.com/Promo'],
    ['https://user:pw@acme.links.example.com/Promo'],
    ['https://acme.links.example.org/Promo'],
    ['https://links.example.com/Promo'],
    ['https://acme.links.example.com/'],
    ['https://acme.links.example.com'],
    ['https://acme.links.example.com/Promo/'],
    ['https://acme.links.example.com/a/b'],
    ['https://acme.links.example.com/.well-known/assetlinks.json'],
  ])('%s names no link', (url) => {
    expect(parseLinkUrl(url, domain)).toBeNull();
  });
});
