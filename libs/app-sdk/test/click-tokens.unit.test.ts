import {
  clickTokenFromReferrer,
  clickTokenFromUrl,
  evidenceToSend,
  hostOfUrl,
  isClickTokenUrl,
  isOnLinkHost,
} from '../src';

const TOKEN = '4fZ0aQ9kLmN2pR7sT1uV';
const OTHER = '9xY8wV7uT6sR5qP4oN3m';
const LINK_HOSTS = ['acme.links.example.com', 'acme-test.links.example.com'];

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

  it('takes the last ls_click as the gateway does, with no fallback to an earlier one', () => {
    expect(clickTokenFromReferrer(`ls_click=${OTHER}&ls_click=${TOKEN}`)).toBe(TOKEN);
    expect(clickTokenFromReferrer(`ls_click=x&ls_click=${TOKEN}`)).toBe(TOKEN);
    expect(clickTokenFromReferrer(`ls_click=${TOKEN}&ls_click=x`)).toBeNull();
    expect(clickTokenFromReferrer(`ls_click=${TOKEN}&ls_click=`)).toBeNull();
    expect(clickTokenFromReferrer(`ls_click=${TOKEN}&ls_click`)).toBeNull();
    expect(clickTokenFromReferrer(`ls_click=${TOKEN}&ls_click=%E0%A4%A`)).toBeNull();
    expect(clickTokenFromReferrer(`ls_click%3D${TOKEN}%26ls_click%3Dx`)).toBeNull();
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
    expect(isClickTokenUrl(copied, LINK_HOSTS)).toBe(true);
    expect(isClickTokenUrl(copied.replace('acme.', 'acme-test.'), LINK_HOSTS)).toBe(true);
  });

  it('take the last ls_click of a URL as the gateway does, with no fallback', () => {
    expect(clickTokenFromUrl(`${copied}&ls_click=${OTHER}`)).toBe(OTHER);
    expect(clickTokenFromUrl(`${copied}&ls_click=x`)).toBeNull();
    expect(clickTokenFromUrl(`https://acme.links.example.com/a?ls_click=x&ls_click=${TOKEN}`)).toBe(
      TOKEN,
    );
    expect(isClickTokenUrl(`${copied}&ls_click=x`, LINK_HOSTS)).toBe(false);
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
      `https://evil.example/?ls_click=${TOKEN}`,
      `https://acme.links.example.com.evil.example/?ls_click=${TOKEN}`,
      '',
    ]) {
      expect({ text, accepted: isClickTokenUrl(text, LINK_HOSTS) }).toEqual({
        text,
        accepted: false,
      });
    }
  });

  it('compare host names only: any case, any port, no list no match', () => {
    expect(isClickTokenUrl(copied.replace('acme.', 'ACME.'), LINK_HOSTS)).toBe(true);
    expect(isClickTokenUrl(copied, ['ACME.links.example.com'])).toBe(true);
    expect(isOnLinkHost('https://acme.links.example.com:8443/spring', LINK_HOSTS)).toBe(true);
    expect(isOnLinkHost('https://acme.links.example.com./spring', LINK_HOSTS)).toBe(true);
    expect(isClickTokenUrl(copied, [])).toBe(false);
    expect(hostOfUrl('http://Acme.Links.Localhost:8081/x')).toBe('acme.links.localhost');
    expect(hostOfUrl('https://[::1]:8443/x')).toBe('[::1]');
  });
});

describe('evidenceToSend', () => {
  it('keeps what can name a link and drops the rest before it leaves the device', () => {
    expect(
      evidenceToSend(
        {
          platform: 'ios',
          playReferrer: 'utm_source=google-play',
          clipboardUrl: 'my secret note',
          openedUrl: 'acme://home',
        },
        LINK_HOSTS,
      ),
    ).toEqual({ platform: 'ios' });
    expect(
      evidenceToSend(
        {
          platform: 'android',
          playReferrer: `ls_click=${TOKEN}`,
          openedUrl: 'https://acme.links.example.com/spring',
        },
        LINK_HOSTS,
      ),
    ).toEqual({
      platform: 'android',
      playReferrer: `ls_click=${TOKEN}`,
      openedUrl: 'https://acme.links.example.com/spring',
    });
  });

  it('sends of a Play referrer only its ls_click pair, never its campaign data', () => {
    for (const playReferrer of [
      `gclid=Cj0KCQ-secret&utm_source=google&ls_click=${TOKEN}&utm_campaign=spring`,
      `utm_source%3Dmail%26ls_click%3D${TOKEN}`,
    ]) {
      expect(evidenceToSend({ platform: 'android', playReferrer }, LINK_HOSTS)).toEqual({
        platform: 'android',
        playReferrer: `ls_click=${TOKEN}`,
      });
    }
  });

  it('sends clipboard and opened URLs only on the link hosts given', () => {
    const elsewhere = `https://elsewhere.example/spring?ls_click=${TOKEN}`;
    expect(
      evidenceToSend(
        { platform: 'ios', clipboardUrl: elsewhere, openedUrl: elsewhere },
        LINK_HOSTS,
      ),
    ).toEqual({ platform: 'ios' });
    // A universal link of the app's own domain, e.g. a password reset, is not a link host's.
    const reset = 'https://acme.example.com/reset-password?token=s3cr3t';
    expect(evidenceToSend({ platform: 'ios', openedUrl: reset }, LINK_HOSTS)).toEqual({
      platform: 'ios',
    });
    // The test builds' host only when it is listed.
    const testLink = `https://acme-test.links.example.com/spring?ls_click=${TOKEN}`;
    expect(
      evidenceToSend({ platform: 'ios', clipboardUrl: testLink }, ['acme.links.example.com']),
    ).toEqual({ platform: 'ios' });
    expect(evidenceToSend({ platform: 'ios', clipboardUrl: testLink }, LINK_HOSTS)).toEqual({
      platform: 'ios',
      clipboardUrl: testLink,
    });
  });
});
