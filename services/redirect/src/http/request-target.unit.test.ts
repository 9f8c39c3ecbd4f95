import { aliasFromPath, requestPath } from './request-target';

describe('requestPath', () => {
  it('drops the query', () => {
    expect(requestPath('/Promo?utm_source=x')).toBe('/Promo');
    expect(requestPath('/Promo')).toBe('/Promo');
  });

  it('refuses targets that are not origin-form', () => {
    expect(requestPath('http://acme.links.test/Promo')).toBeNull();
    expect(requestPath('*')).toBeNull();
    expect(requestPath(undefined)).toBeNull();
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
