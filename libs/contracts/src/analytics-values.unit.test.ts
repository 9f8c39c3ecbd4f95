import { MAX_UTM_LENGTH } from './analytics-dimensions';
import { isCountry, normaliseUtm, referrerHost } from './analytics-values';

describe('normaliseUtm', () => {
  it.each([
    [null, 'none'],
    ['', 'none'],
    ['   ', 'none'],
    ['newsletter', 'newsletter'],
    ['  Spring Sale\t2026 ', 'spring sale 2026'],
    ['a\u0000b\u001fc\u007fd', 'abcd'],
    ['Ümlaut', 'ümlaut'],
  ])('%j is %j', (raw, value) => {
    expect(normaliseUtm(raw)).toBe(value);
  });

  it(`cuts at ${MAX_UTM_LENGTH} characters, never inside one`, () => {
    expect(normaliseUtm('x'.repeat(500))).toBe('x'.repeat(MAX_UTM_LENGTH));
    expect(Array.from(normaliseUtm('😀'.repeat(150)))).toHaveLength(MAX_UTM_LENGTH);
  });
});

describe('referrerHost', () => {
  it.each([
    [undefined, 'direct'],
    ['', 'direct'],
    ['not a url', 'direct'],
    ['android-app://com.google.android.gm/', 'direct'],
    ['https://WWW.Example.org/path/secret?q=1#x', 'www.example.org'],
    ['http://user:pass@news.example.com:8080/a', 'news.example.com'],
    ['https://example.com./', 'example.com'],
    ['https://bücher.example/', 'xn--bcher-kva.example'],
  ])('%j is %j', (raw, host) => {
    expect(referrerHost(raw)).toBe(host);
  });
});

describe('isCountry', () => {
  it('takes ISO 3166-1 alpha-2 codes and unknown', () => {
    expect(['DE', 'US', 'unknown'].every(isCountry)).toBe(true);
    expect(['de', 'DEU', 'XX1', ''].some(isCountry)).toBe(false);
  });
});
