import { isPlayStoreListing, withPassthroughQuery, withPlayReferrerToken } from './fallback-url';

describe('withPassthroughQuery', () => {
  it.each([
    ['no query of its own', 'https://example.com/p', 'a=1', 'https://example.com/p?a=1'],
    ['a query of its own', 'https://example.com/p?x=1', 'a=1', 'https://example.com/p?x=1&a=1'],
    ['a fragment', 'https://example.com/p#top', 'a=1', 'https://example.com/p?a=1#top'],
    [
      'a query and a fragment',
      'https://example.com/p?x=1#s?q=2',
      'a=1',
      'https://example.com/p?x=1&a=1#s?q=2',
    ],
    ['an empty query (`?` alone)', 'https://example.com/p?', 'a=1', 'https://example.com/p?a=1'],
    ['a query ending in &', 'https://example.com/p?x=1&', 'a=1', 'https://example.com/p?x=1&a=1'],
    ['a bare host', 'https://example.com', 'a=1', 'https://example.com?a=1'],
    ['the same name', 'https://example.com/p?a=0', 'a=1', 'https://example.com/p?a=0&a=1'],
  ])('appends the query to a fallback with %s', (_name, fallback, query, expected) => {
    expect(withPassthroughQuery(fallback, query)).toBe(expected);
  });

  it('keeps the query byte for byte: escapes, +, repeated and empty names, odd characters', () => {
    const query = 'q=caf%C3%A9+au+lait&%41=%2F%3F%26&a=&a&&=x&x="<>{}|\\^`';
    expect(withPassthroughQuery('https://example.com/p?s=%20', query)).toBe(
      `https://example.com/p?s=%20&${query}`,
    );
  });

  it('adds nothing for an empty query', () => {
    for (const fallback of ['https://example.com/p', 'https://example.com/p?x=1#f']) {
      expect(withPassthroughQuery(fallback, '')).toBe(fallback);
    }
  });
});

const TOKEN = 'AbC123xyz0AbC123xyz0Ab';
const LISTING = 'https://play.google.com/store/apps/details?id=com.example.app';

describe('isPlayStoreListing', () => {
  it.each([
    LISTING,
    'https://play.google.com/store/apps/details?hl=de&id=com.example.app#reviews',
    'https://PLAY.Google.com/store/apps/details?id=com.example.app',
    'https://play.google.com:443/store/apps/details?id=com.example.app',
  ])('%s is one', (url) => {
    expect(isPlayStoreListing(url)).toBe(true);
  });

  it.each([
    'http://play.google.com/store/apps/details?id=com.example.app',
    'https://play.google.com/store/apps/details',
    'https://play.google.com/store/apps/details?id=',
    'https://play.google.com/store/apps/developer?id=Example',
    'https://play.google.com.evil.example/store/apps/details?id=com.example.app',
    'https://play.google.com@evil.example/store/apps/details?id=com.example.app',
    'https://play.google.com:8443/store/apps/details?id=com.example.app',
    'https://apps.apple.com/app/id1?id=1',
    'not a url',
  ])('%s is not', (url) => {
    expect(isPlayStoreListing(url)).toBe(false);
  });
});

describe('withPlayReferrerToken', () => {
  it('adds referrer=ls_click%3D<token> to a listing without a referrer', () => {
    expect(withPlayReferrerToken(LISTING, TOKEN)).toBe(`${LISTING}&referrer=ls_click%3D${TOKEN}`);
    expect(withPlayReferrerToken(`${LISTING}#details`, TOKEN)).toBe(
      `${LISTING}&referrer=ls_click%3D${TOKEN}#details`,
    );
  });

  it('appends %26ls_click%3D<token> to a referrer value, keeping every other byte', () => {
    const url =
      'https://play.google.com/store/apps/details?id=com.example.app&referrer=utm_source%3Dmail%26utm_medium%3Demail&hl=en#x';
    expect(withPlayReferrerToken(url, TOKEN)).toBe(
      `https://play.google.com/store/apps/details?id=com.example.app&referrer=utm_source%3Dmail%26utm_medium%3Demail%26ls_click%3D${TOKEN}&hl=en#x`,
    );
  });

  it('fills an empty or bare referrer', () => {
    expect(withPlayReferrerToken(`${LISTING}&referrer=&hl=en`, TOKEN)).toBe(
      `${LISTING}&referrer=ls_click%3D${TOKEN}&hl=en`,
    );
    expect(withPlayReferrerToken(`${LISTING}&referrer`, TOKEN)).toBe(
      `${LISTING}&referrer=ls_click%3D${TOKEN}`,
    );
  });

  // The decision for a `referrer` in both the fallback and the passthrough query: both stay, and
  // each carries the token, since Google does not say which of several Play hands to the app.
  it('puts the token in every referrer, such as one the passthrough query added', () => {
    const url = `${LISTING}&referrer=utm_source%3Dsite&referrer=utm_source%3Dmail`;
    expect(withPlayReferrerToken(url, TOKEN)).toBe(
      `${LISTING}&referrer=utm_source%3Dsite%26ls_click%3D${TOKEN}&referrer=utm_source%3Dmail%26ls_click%3D${TOKEN}`,
    );
  });

  it('leaves names that only resemble referrer alone', () => {
    expect(withPlayReferrerToken(`${LISTING}&referrer_x=1&xreferrer=2`, TOKEN)).toBe(
      `${LISTING}&referrer_x=1&xreferrer=2&referrer=ls_click%3D${TOKEN}`,
    );
  });

  it('leaves any other URL unchanged', () => {
    const url = 'https://example.com/store/apps/details?id=com.example.app&referrer=x';
    expect(withPlayReferrerToken(url, TOKEN)).toBe(url);
  });
});
