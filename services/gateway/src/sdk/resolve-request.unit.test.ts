import { parseResolveRequest } from './resolve-request';

describe('parseResolveRequest', () => {
  it('takes a body with a non-empty url, as given', () => {
    expect(parseResolveRequest({ url: ' https://a.links.example/x?y#z ' })).toEqual({
      ok: true,
      url: ' https://a.links.example/x?y#z ',
    });
  });

  it.each([
    [{}, { url: 'is required' }],
    [{ url: undefined }, { url: 'is required' }],
    [{ url: '' }, { url: 'must not be empty' }],
    [{ url: 1 }, { url: 'must be a string' }],
    [{ url: null }, { url: 'must be a string' }],
    [{ url: true }, { url: 'must be a string' }],
    [{ url: [] }, { url: 'must be a string' }],
    [{ url: 'x', extra: 1 }, { extra: 'is not a field of this request' }],
    [
      { a: 1, b: 2 },
      {
        url: 'is required',
        a: 'is not a field of this request',
        b: 'is not a field of this request',
      },
    ],
  ])('refuses %j, naming each field', (body, fields) => {
    expect(parseResolveRequest(body)).toEqual({ ok: false, fields });
  });

  it('names a field called __proto__ as an own member of fields', () => {
    const body = JSON.parse('{"url":"x","__proto__":{"polluted":true}}') as unknown;
    const parsed = parseResolveRequest(body);
    expect(parsed.ok).toBe(false);
    const fields = parsed.ok ? {} : parsed.fields;
    expect(Object.keys(fields)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(fields)).toBe(Object.prototype);
    expect(JSON.stringify(fields)).toBe('{"__proto__":"is not a field of this request"}');
  });
});
