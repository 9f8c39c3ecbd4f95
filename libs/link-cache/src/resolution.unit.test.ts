import type { LinkResolution } from './resolution';
import { decodeResolution, encodeResolution, redirectsAt, redirectsUntil } from './resolution';

const now = Date.UTC(2030, 0, 1);
const link: LinkResolution = {
  linkId: 'lnk_01JABCDEF',
  webFallbackUrl: 'https://example.com/a b?c=d e',
  iosFallbackUrl: 'https://apps.apple.com/app/id1 "quoted"',
  expiresAt: now,
  archived: false,
  title: 'Summer "sale" <b>',
  iosDeferredPage: true,
};

describe('encodeResolution / decodeResolution', () => {
  it.each([
    ['expiring', link],
    ['no expiry, no iOS fallback', { ...link, expiresAt: null, iosFallbackUrl: null }],
    ['archived', { ...link, archived: true }],
    ['no title, no deferred page', { ...link, title: null, iosDeferredPage: false }],
  ])('round-trips a link: %s', (_name, resolution) => {
    expect(decodeResolution(encodeResolution(resolution))).toEqual(resolution);
  });

  it('leads with redirectsUntil and the link id, as the lookup script reads them', () => {
    expect(encodeResolution(link).startsWith(`${now} lnk_01JABCDEF {`)).toBe(true);
    expect(encodeResolution({ ...link, archived: true }).startsWith(' lnk_01JABCDEF {')).toBe(true);
  });

  it('round-trips the negative entry', () => {
    expect(decodeResolution(encodeResolution(null))).toBeNull();
  });

  it.each([
    [
      'the format before title and iosDeferredPage',
      `${now} lnk_1 {"w":"https://e.com","s":null,"e":${now},"a":false}`,
    ],
    [
      'a title that is not a string',
      ' lnk_1 {"w":"https://e.com","s":null,"e":null,"a":false,"t":1,"d":false}',
    ],
    [
      'a missing deferred-page flag',
      ' lnk_1 {"w":"https://e.com","s":null,"e":null,"a":false,"t":null}',
    ],
    ['the former JSON entry', '{"i":"lnk_1","w":"https://e.com","s":null,"e":null,"a":false}'],
    ['no link id', '  {"w":"https://e.com","s":null,"e":null,"a":false}'],
    ['a non-numeric expiry', 'x lnk_1 {"w":"https://e.com","s":null,"e":null,"a":false}'],
    ['a missing field', ' lnk_1 {"w":"https://e.com","s":null,"e":null}'],
    ['broken JSON', ' lnk_1 {"w":'],
    ['nothing', ''],
  ])('treats %s as unreadable', (_name, value) => {
    expect(decodeResolution(value)).toBeUndefined();
  });
});

describe('redirectsAt', () => {
  it('holds until the expiry, exclusive, unless archived', () => {
    expect(redirectsAt(link, now - 1)).toBe(true);
    expect(redirectsAt(link, now)).toBe(false);
    expect(redirectsAt({ ...link, archived: true }, now + 1)).toBe(true);
    expect(redirectsAt({ ...link, expiresAt: null }, now + 1)).toBe(true);
    expect(redirectsUntil({ ...link, archived: true })).toBeNull();
  });
});
