import {
  clickTokenFromReferrer,
  clickTokenFromUrl,
  evidenceToSend,
  hostOfUrl,
  isClickTokenUrl,
} from '../src';

const TOKEN = '4fZ0aQ9kLmN2pR7sT1uV';

describe('clickTokenFromReferrer', () => {
  it('reads the token of a referrer as the Play Install Referrer API hands it over', () => {
    expect(clickTokenFromReferrer(`ls_click=${TOKEN}`)).toBe(TOKEN);
    expect(clickTokenFromReferrer(`utm_source=mail&ls_click=${TOKEN}&x=1`)).toBe(TOKEN);
  });

  it('finds none in an install that came from elsewhere', () => {
    expect(clickTokenFromReferrer('utm_source=google-play&utm_medium=organic')).toBeNull();
    expect(clickTokenFromReferrer('')).toBeNull();
    expect(clickTokenFromReferrer(null)).toBeNull();
    expect(clickTokenFromReferrer('ls_click=')).toBeNull();
    expect(clickTokenFromReferrer('ls_click=short')).toBeNull();
    expect(clickTokenFromReferrer(`ls_click=${TOKEN}%3Cscript`)).toBeNull();
    expect(clickTokenFromReferrer('ls_click=%E0%A4%A')).toBeNull();
  });

  it('reads a referrer still encoded as it stood in the store URL, as the gateway does', () => {
    expect(clickTokenFromReferrer(`ls_click%3D${TOKEN}`)).toBe(TOKEN);
    expect(clickTokenFromReferrer(`utm_source%3Dmail%26ls_click%3D${TOKEN}`)).toBe(TOKEN);
    expect(clickTokenFromReferrer('utm_source%3Dmail%E0%A4%A')).toBeNull();
  });
});

describe('clickTokenFromUrl and isClickTokenUrl', () => {
  const copied = `https://acme.links.example.com/spring?ls_click=${TOKEN}`;

  it('accept the URL the iOS page copies, with or without other query or a fragment', () => {
    expect(clickTokenFromUrl(copied)).toBe(TOKEN);
    expect(clickTokenFromUrl(`  ${copied}\n`)).toBe(TOKEN);
    expect(clickTokenFromUrl(`http://acme.links.localhost/a?b=1&ls_click=${TOKEN}#top`)).toBe(
      TOKEN,
    );
    expect(isClickTokenUrl(copied)).toBe(true);
  });

  it('refuse anything else a clipboard may hold', () => {
    for (const text of [
      'hunter2',
      'https://acme.links.example.com/spring',
      `ls_click=${TOKEN}`,
      `Look: ${copied}`,
      `${copied} and more`,
      `acme://spring?ls_click=${TOKEN}`,
      `https://acme.links.example.com/spring#ls_click=${TOKEN}`,
      `https://user@acme.links.example.com/?ls_click=${TOKEN}`,
      '',
    ]) {
      expect({ text, accepted: isClickTokenUrl(text) }).toEqual({ text, accepted: false });
    }
  });

  it('keep to the link hosts given', () => {
    const hosts = ['acme.links.example.com'];
    expect(isClickTokenUrl(copied, hosts)).toBe(true);
    expect(isClickTokenUrl(copied.replace('acme.', 'ACME.'), hosts)).toBe(true);
    expect(isClickTokenUrl(`https://evil.example/?ls_click=${TOKEN}`, hosts)).toBe(false);
    expect(hostOfUrl('http://Acme.Links.Localhost:8081/x')).toBe('acme.links.localhost');
    expect(hostOfUrl('https://[::1]:8443/x')).toBe('[::1]');
  });
});

describe('evidenceToSend', () => {
  it('keeps what can name a link and drops the rest before it leaves the device', () => {
    expect(
      evidenceToSend({
        platform: 'ios',
        playReferrer: 'utm_source=google-play',
        clipboardUrl: 'my secret note',
        openedUrl: 'acme://home',
      }),
    ).toEqual({ platform: 'ios' });
    expect(
      evidenceToSend({
        platform: 'android',
        playReferrer: `ls_click=${TOKEN}`,
        openedUrl: 'https://acme.links.example.com/spring',
      }),
    ).toEqual({
      platform: 'android',
      playReferrer: `ls_click=${TOKEN}`,
      openedUrl: 'https://acme.links.example.com/spring',
    });
  });

  it('sends clipboard and opened URLs only on the link hosts given', () => {
    const elsewhere = `https://elsewhere.example/spring?ls_click=${TOKEN}`;
    expect(
      evidenceToSend({ platform: 'ios', clipboardUrl: elsewhere, openedUrl: elsewhere }, [
        'acme.links.example.com',
      ]),
    ).toEqual({ platform: 'ios' });
  });
});
