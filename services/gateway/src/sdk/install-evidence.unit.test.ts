import { hashClickToken } from '@linkservice/link-cache';
import { evidenceCandidates, tokenFromPlayReferrer } from './install-evidence';

const DOMAIN = 'go.example.test';
const HOST = { subdomainKey: 'acme', environment: 'live' } as const;
const TOKEN = 'Ab3dEf6hIj9kLm2nOp5qRs';
const OTHER = 'Zz9yXx8wVv7uTt6sRr5qQq';

describe('tokenFromPlayReferrer', () => {
  it.each([
    [`ls_click=${TOKEN}`, TOKEN],
    [`utm_source=mail&utm_medium=email&ls_click=${TOKEN}`, TOKEN],
    [`ls_click%3D${TOKEN}`, TOKEN],
    [`utm_source%3Dmail%26ls_click%3D${TOKEN}`, TOKEN],
    [`ls_click=${OTHER}&ls_click=${TOKEN}`, TOKEN],
  ])('finds the token in %j', (referrer, token) => {
    expect(tokenFromPlayReferrer(referrer)).toBe(token);
  });

  it.each([
    '',
    'utm_source=google-play&utm_medium=organic',
    'ls_click=',
    'ls_click=short',
    `ls_click=${TOKEN}!`,
    `ls_click=${TOKEN}&ls_click=bad token`,
    '%E0%A4%A',
    `x_ls_click=${TOKEN}`,
  ])('finds none in %j', (referrer) => {
    expect(tokenFromPlayReferrer(referrer)).toBeNull();
  });
});

describe('evidenceCandidates', () => {
  const link = `https://acme.${DOMAIN}/promo`;

  it('lists the evidence in the order it is tried, tokens as their hashes only', () => {
    const candidates = evidenceCandidates(
      {
        platform: 'android',
        openedUrl: `${link}?ls_click=${OTHER}`,
        clipboardUrl: `${link}?ls_click=${TOKEN}`,
        playReferrer: `ls_click=${TOKEN}`,
      },
      HOST,
      DOMAIN,
    );
    expect(candidates).toEqual([
      { method: 'play_referrer', tokenHash: hashClickToken(TOKEN) },
      { method: 'clipboard', tokenHash: hashClickToken(TOKEN) },
      { method: 'opened_url', alias: 'promo', tokenHash: hashClickToken(OTHER) },
    ]);
    expect(JSON.stringify(candidates)).not.toContain(TOKEN);
  });

  it('takes the opened link by itself when it carries no token', () => {
    expect(evidenceCandidates({ platform: 'ios', openedUrl: `${link}#x` }, HOST, DOMAIN)).toEqual([
      { method: 'opened_url', alias: 'promo', tokenHash: null },
    ]);
  });

  it.each([
    ['a clipboard without a token', { clipboardUrl: link }],
    [
      'a clipboard of another host',
      { clipboardUrl: `https://acme-test.${DOMAIN}/promo?ls_click=${TOKEN}` },
    ],
    [
      'a clipboard of another app',
      { clipboardUrl: `https://other.${DOMAIN}/promo?ls_click=${TOKEN}` },
    ],
    [
      'a clipboard that is no link',
      { clipboardUrl: `https://example.com/promo?ls_click=${TOKEN}` },
    ],
    ['clipboard text', { clipboardUrl: `call me ls_click=${TOKEN}` }],
    ['an opened link of another environment', { openedUrl: `https://acme-test.${DOMAIN}/promo` }],
    ['an opened link with a malformed token', { openedUrl: `${link}?ls_click=nope` }],
    ['an opened URL that names no link', { openedUrl: `https://acme.${DOMAIN}/a/b` }],
    ['nothing', {}],
  ])('drops %s', (_name, evidence) => {
    expect(evidenceCandidates({ platform: 'ios', ...evidence }, HOST, DOMAIN)).toEqual([]);
  });
});
