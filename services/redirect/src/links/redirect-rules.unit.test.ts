import type { LinkResolution } from '@linkservice/link-cache';
import type { LinkRequest } from './redirect-rules';
import { countsClick, headerSafeUrl, redirectOutcome } from './redirect-rules';

const now = Date.UTC(2027, 0, 1);
const link: LinkResolution = {
  linkId: 'lnk_1',
  webFallbackUrl: 'https://example.com/web',
  iosFallbackUrl: 'https://apps.apple.com/app/id1',
  expiresAt: null,
  archived: false,
  title: 'Summer sale',
  iosDeferredPage: false,
};
const TOKEN = 'AbC123xyz0AbC123xyz0Ab';
const PLAY = 'https://play.google.com/store/apps/details?id=com.example.app';

/** A person's GET: a token was minted. */
const get = (client: LinkRequest['client'], query = ''): LinkRequest => ({
  client,
  query,
  clickToken: TOKEN,
});
/** A HEAD (or any request that counts nothing): no token. */
const head = (client: LinkRequest['client'], query = ''): LinkRequest => ({
  client,
  query,
  clickToken: null,
});

describe('redirectOutcome', () => {
  it('is not_found for a missing link, for everyone', () => {
    for (const client of ['ios', 'other', 'previewer'] as const) {
      expect(redirectOutcome(null, get(client), now)).toEqual({ kind: 'not_found' });
    }
  });

  it('sends iOS devices to the iOS fallback and everyone else to the web fallback', () => {
    expect(redirectOutcome(link, get('ios'), now)).toEqual({
      kind: 'redirect',
      linkId: 'lnk_1',
      location: link.iosFallbackUrl,
    });
    expect(redirectOutcome(link, get('other'), now)).toEqual({
      kind: 'redirect',
      linkId: 'lnk_1',
      location: link.webFallbackUrl,
    });
  });

  it('sends iOS devices to the web fallback when no iOS fallback is set', () => {
    const noIos = { ...link, iosFallbackUrl: null, iosDeferredPage: true };
    expect(redirectOutcome(noIos, get('ios'), now)).toMatchObject({
      kind: 'redirect',
      location: link.webFallbackUrl,
    });
  });

  it('is expired from expiresAt on, evaluated against the given clock, for previews too', () => {
    const expiring = { ...link, expiresAt: now };
    expect(redirectOutcome(expiring, get('other'), now - 1)).toMatchObject({ kind: 'redirect' });
    expect(redirectOutcome(expiring, get('other'), now)).toEqual({ kind: 'expired' });
    expect(redirectOutcome(expiring, head('previewer'), now)).toEqual({ kind: 'expired' });
  });

  it('keeps redirecting an archived link, even past its expiry', () => {
    const archived = { ...link, archived: true, expiresAt: now - 1000 };
    expect(redirectOutcome(archived, get('other'), now)).toMatchObject({
      kind: 'redirect',
      location: link.webFallbackUrl,
    });
    expect(redirectOutcome(archived, head('previewer'), now)).toMatchObject({ kind: 'preview' });
  });

  it('gives previewers the preview, with the title (null when the link has none)', () => {
    expect(redirectOutcome(link, head('previewer'), now)).toEqual({
      kind: 'preview',
      linkId: 'lnk_1',
      title: 'Summer sale',
    });
    expect(redirectOutcome({ ...link, title: null }, head('previewer'), now)).toEqual({
      kind: 'preview',
      linkId: 'lnk_1',
      title: null,
    });
  });

  it('passes the query through to either fallback', () => {
    const withQuery = { ...link, webFallbackUrl: 'https://example.com/web?x=1#f' };
    expect(redirectOutcome(withQuery, get('other', 'utm=a%20b'), now)).toMatchObject({
      location: 'https://example.com/web?x=1&utm=a%20b#f',
    });
    expect(redirectOutcome(link, get('ios', 'utm=a'), now)).toMatchObject({
      location: 'https://apps.apple.com/app/id1?utm=a',
    });
  });

  describe('Play Store fallback', () => {
    const play = { ...link, webFallbackUrl: PLAY };

    it('carries the click token in the install referrer, whatever the user agent', () => {
      for (const client of ['other', 'ios'] as const) {
        const noIos = { ...play, iosFallbackUrl: null };
        expect(redirectOutcome(noIos, get(client), now)).toMatchObject({
          location: `${PLAY}&referrer=ls_click%3D${TOKEN}`,
        });
      }
    });

    it('adds the token after the passthrough query, to its referrer too', () => {
      expect(redirectOutcome(play, get('other', 'referrer=utm_source%3Dmail'), now)).toMatchObject({
        location: `${PLAY}&referrer=utm_source%3Dmail%26ls_click%3D${TOKEN}`,
      });
    });

    it('carries no token without a click (HEAD)', () => {
      expect(redirectOutcome(play, head('other', 'a=1'), now)).toMatchObject({
        location: `${PLAY}&a=1`,
      });
    });

    it('is not touched on the iOS fallback', () => {
      const iosPlay = { ...link, iosFallbackUrl: PLAY };
      expect(redirectOutcome(iosPlay, get('ios'), now)).toMatchObject({ location: PLAY });
    });
  });

  describe('iOS deferred page', () => {
    const optedIn = { ...link, iosDeferredPage: true };

    it('replaces the iOS redirect where the app opted in, with the passthrough query', () => {
      expect(redirectOutcome(optedIn, get('ios', 'utm=a'), now)).toEqual({
        kind: 'deferred_page',
        linkId: 'lnk_1',
        title: 'Summer sale',
        fallback: 'https://apps.apple.com/app/id1?utm=a',
        clickToken: TOKEN,
      });
      expect(redirectOutcome(optedIn, head('ios'), now)).toMatchObject({
        kind: 'deferred_page',
        clickToken: null,
      });
    });

    it('is for iOS only, and only with an iOS fallback', () => {
      expect(redirectOutcome(optedIn, get('other'), now)).toMatchObject({ kind: 'redirect' });
      expect(redirectOutcome(optedIn, head('previewer'), now)).toMatchObject({ kind: 'preview' });
      expect(redirectOutcome(link, get('ios'), now)).toMatchObject({ kind: 'redirect' });
    });

    it('never puts a fallback that is not http(s) into the page', () => {
      const odd = { ...optedIn, iosFallbackUrl: 'javascript:alert(1)' };
      expect(redirectOutcome(odd, get('ios'), now)).toMatchObject({ kind: 'redirect' });
    });
  });
});

describe('countsClick', () => {
  it('holds for a person following the link: a redirect or the deferred page', () => {
    expect(countsClick({ kind: 'redirect', linkId: 'l', location: 'https://e.com' })).toBe(true);
    expect(
      countsClick({
        kind: 'deferred_page',
        linkId: 'l',
        title: null,
        fallback: 'https://e.com',
        clickToken: null,
      }),
    ).toBe(true);
    expect(countsClick({ kind: 'preview', linkId: 'l', title: null })).toBe(false);
    expect(countsClick({ kind: 'expired' })).toBe(false);
    expect(countsClick({ kind: 'not_found' })).toBe(false);
  });
});

describe('headerSafeUrl', () => {
  it('keeps a plain URL exactly as stored', () => {
    expect(headerSafeUrl('https://example.com')).toBe('https://example.com');
    expect(headerSafeUrl('https://example.com/a?b=c#d')).toBe('https://example.com/a?b=c#d');
  });

  it('escapes what a header cannot carry', () => {
    expect(headerSafeUrl('https://example.com/café menu')).toBe(
      'https://example.com/caf%C3%A9%20menu',
    );
  });
});
