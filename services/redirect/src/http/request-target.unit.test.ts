import { requestPath } from './request-target';

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
