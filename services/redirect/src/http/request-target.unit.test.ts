import { requestPath, requestQuery } from './request-target';

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

describe('requestQuery', () => {
  it('is the raw query, exactly as sent', () => {
    expect(requestQuery('/Promo?utm_source=x&a=%2F+b')).toBe('utm_source=x&a=%2F+b');
    expect(requestQuery('/Promo?a=1?b=2')).toBe('a=1?b=2');
  });

  it('is empty without a query, or with `?` alone', () => {
    expect(requestQuery('/Promo')).toBe('');
    expect(requestQuery('/Promo?')).toBe('');
    expect(requestQuery(undefined)).toBe('');
  });

  it('stops at a fragment', () => {
    expect(requestQuery('/Promo?a=1#frag')).toBe('a=1');
    expect(requestQuery('/Promo#frag?a=1')).toBe('');
  });
});
