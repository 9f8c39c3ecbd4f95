import type { LinkResolution } from '@linkservice/link-cache';
import { headerSafeUrl, isIosUserAgent, redirectOutcome } from './redirect-rules';

const UA = {
  iPhone:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
  iPad: 'Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/16.6 Mobile/15E148 Safari/604.1',
  iPod: 'Mozilla/5.0 (iPod touch; CPU iPhone OS 15_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/15.0 Mobile/15E148 Safari/604.1',
  instagramOnIphone:
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 300.0.0.0',
  android:
    'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
  mac: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15',
  windows:
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
};

const now = Date.UTC(2027, 0, 1);
const link: LinkResolution = {
  linkId: 'lnk_1',
  webFallbackUrl: 'https://example.com/web',
  iosFallbackUrl: 'https://apps.apple.com/app/id1',
  expiresAt: null,
  archived: false,
  title: null,
  iosDeferredPage: false,
};

describe('isIosUserAgent', () => {
  it.each([UA.iPhone, UA.iPad, UA.iPod, UA.instagramOnIphone])('%s is iOS', (ua) => {
    expect(isIosUserAgent(ua)).toBe(true);
  });
  it.each([UA.android, UA.mac, UA.windows, '', undefined])('%s is not iOS', (ua) => {
    expect(isIosUserAgent(ua)).toBe(false);
  });
});

describe('redirectOutcome', () => {
  it('is not_found for a missing link', () => {
    expect(redirectOutcome(null, UA.iPhone, now)).toEqual({ kind: 'not_found' });
  });

  it('sends iOS devices to the iOS fallback and everyone else to the web fallback', () => {
    expect(redirectOutcome(link, UA.iPad, now)).toEqual({
      kind: 'redirect',
      linkId: 'lnk_1',
      location: link.iosFallbackUrl,
    });
    expect(redirectOutcome(link, UA.android, now)).toMatchObject({
      location: link.webFallbackUrl,
    });
    expect(redirectOutcome(link, undefined, now)).toMatchObject({ location: link.webFallbackUrl });
  });

  it('sends iOS devices to the web fallback when no iOS fallback is set', () => {
    const noIos = { ...link, iosFallbackUrl: null };
    expect(redirectOutcome(noIos, UA.iPhone, now)).toMatchObject({
      location: link.webFallbackUrl,
    });
  });

  it('is expired from expiresAt on, evaluated against the given clock', () => {
    const expiring = { ...link, expiresAt: now };
    expect(redirectOutcome(expiring, UA.android, now - 1)).toMatchObject({ kind: 'redirect' });
    expect(redirectOutcome(expiring, UA.android, now)).toEqual({ kind: 'expired' });
  });

  it('keeps redirecting an archived link, even past its expiry', () => {
    const archived = { ...link, archived: true, expiresAt: now - 1000 };
    expect(redirectOutcome(archived, UA.android, now)).toMatchObject({
      kind: 'redirect',
      location: link.webFallbackUrl,
    });
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
