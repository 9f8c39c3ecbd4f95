import { UserAgentClassifier, familiesOf } from './user-agent-families';

const CASES: [string, string | undefined, ReturnType<typeof familiesOf>][] = [
  [
    'iPhone Safari',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
    { platform: 'ios', os: 'ios', browser: 'safari', bot: false },
  ],
  [
    'Android Chrome',
    'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
    { platform: 'android', os: 'android', browser: 'chrome', bot: false },
  ],
  [
    'Windows Edge',
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 Edg/124.0.0.0',
    { platform: 'desktop', os: 'windows', browser: 'edge', bot: false },
  ],
  [
    'macOS Firefox',
    'Mozilla/5.0 (Macintosh; Intel Mac OS X 14.4; rv:125.0) Gecko/20100101 Firefox/125.0',
    { platform: 'desktop', os: 'macos', browser: 'firefox', bot: false },
  ],
  [
    'Instagram in-app on iOS',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 Instagram 329.0.0.0.58 (iPhone15,2; iOS 17_4; en_US; en; scale=3.00; 1179x2556; 588411423)',
    { platform: 'ios', os: 'ios', browser: 'instagram', bot: false },
  ],
  [
    'Samsung Internet',
    'Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/24.0 Chrome/117.0.0.0 Mobile Safari/537.36',
    { platform: 'android', os: 'android', browser: 'samsung', bot: false },
  ],
  [
    'Facebook in-app on iOS',
    'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148 [FBAN/FBIOS;FBAV/460.0]',
    { platform: 'ios', os: 'ios', browser: 'facebook', bot: false },
  ],
  [
    'Android web view',
    'Mozilla/5.0 (Linux; Android 14; Pixel 8 Build/UQ1A; wv) AppleWebKit/537.36 (KHTML, like Gecko) Version/4.0 Chrome/124.0.0.0 Mobile Safari/537.36',
    { platform: 'android', os: 'android', browser: 'webview', bot: false },
  ],
  [
    'ChromeOS',
    'Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
    { platform: 'desktop', os: 'chromeos', browser: 'chrome', bot: false },
  ],
  ['curl', 'curl/8.5.0', { platform: 'other', os: 'other', browser: 'other', bot: true }],
  [
    'a search crawler',
    'Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)',
    { platform: 'other', os: 'other', browser: 'other', bot: true },
  ],
  ['none', undefined, { platform: 'other', os: 'other', browser: 'other', bot: false }],
];

describe('familiesOf', () => {
  it.each(CASES)('%s', (_name, userAgent, expected) => {
    expect(familiesOf(userAgent)).toEqual(expected);
  });

  it('never answers versions or the user agent itself', () => {
    for (const [, userAgent] of CASES) {
      const values = Object.values(familiesOf(userAgent)).filter((v) => typeof v === 'string');
      for (const value of values) expect(value).toMatch(/^[a-z]+$/);
    }
  });
});

describe('UserAgentClassifier', () => {
  it('answers what familiesOf answers, from its cache the second time', () => {
    const classifier = new UserAgentClassifier(2);
    const [, userAgent, expected] = CASES[0];
    expect(classifier.classify(userAgent)).toEqual(expected);
    expect(classifier.classify(userAgent)).toBe(classifier.classify(userAgent));
  });
});
