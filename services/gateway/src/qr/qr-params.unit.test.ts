import { contrastRatio, hexColorOf, parseQrQuery, relativeLuminance } from './qr-params';
import { ifNoneMatchMatches, qrEtagOf } from './qr-code';

describe('parseQrQuery', () => {
  it('gives the defaults for an empty query', () => {
    expect(parseQrQuery({})).toEqual({
      ok: true,
      params: {
        format: 'svg',
        size: 512,
        margin: 4,
        level: 'M',
        color: '#000000',
        background: '#ffffff',
      },
    });
  });

  it('takes the bounds of each range', () => {
    for (const [size, margin] of [
      ['64', '0'],
      ['2048', '16'],
    ]) {
      const parsed = parseQrQuery({ size, margin });
      expect(parsed).toMatchObject({
        ok: true,
        params: { size: Number(size), margin: Number(margin) },
      });
    }
  });

  it('names a repeated parameter', () => {
    expect(parseQrQuery({ level: ['L', 'H'] })).toEqual({
      ok: false,
      fields: { level: 'must be given once, as one value' },
    });
  });
});

describe('colours', () => {
  it('reads #rgb and #rrggbb, any case, as #rrggbb', () => {
    expect(hexColorOf('#AbC')).toBe('#aabbcc');
    expect(hexColorOf('#A1b2C3')).toBe('#a1b2c3');
    for (const bad of ['abc', '#abcd', '#12345g', 'red', '#', '']) {
      expect(hexColorOf(bad)).toBeUndefined();
    }
  });

  it('computes the WCAG contrast ratio', () => {
    expect(relativeLuminance('#000000')).toBe(0);
    expect(relativeLuminance('#ffffff')).toBeCloseTo(1, 10);
    expect(contrastRatio('#000000', '#ffffff')).toBeCloseTo(21, 10);
    expect(contrastRatio('#ffffff', '#000000')).toBeCloseTo(21, 10);
    // WCAG's own example: #767676 on white is just above 4.5:1.
    expect(contrastRatio('#767676', '#ffffff')).toBeCloseTo(4.54, 2);
  });

  it('takes a pair at 3:1 and refuses one just below', () => {
    // #949494 on white is 3.03:1, #959595 2.99:1.
    expect(parseQrQuery({ color: '#949494' }).ok).toBe(true);
    expect(parseQrQuery({ color: '#959595' })).toMatchObject({
      ok: false,
      fields: { color: expect.stringContaining('2.99:1') as unknown },
    });
  });
});

describe('ETag', () => {
  const params = parseQrQuery({});
  if (!params.ok) throw new Error('defaults must parse');

  it('is strong and stable', () => {
    const etag = qrEtagOf('https://a.example.com/x?qr=1', params.params);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(qrEtagOf('https://a.example.com/x?qr=1', { ...params.params })).toBe(etag);
    expect(qrEtagOf('https://a.example.com/y?qr=1', params.params)).not.toBe(etag);
  });

  it('matches If-None-Match weakly, in lists and as *', () => {
    const etag = '"abc"';
    expect(ifNoneMatchMatches(undefined, etag)).toBe(false);
    expect(ifNoneMatchMatches('"abc"', etag)).toBe(true);
    expect(ifNoneMatchMatches('W/"abc"', etag)).toBe(true);
    expect(ifNoneMatchMatches('"x" ,  "abc"', etag)).toBe(true);
    expect(ifNoneMatchMatches(' * ', etag)).toBe(true);
    expect(ifNoneMatchMatches('"abcd"', etag)).toBe(false);
    expect(ifNoneMatchMatches('abc', etag)).toBe(false);
  });
});
