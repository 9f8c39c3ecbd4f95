import {
  DERIVED_SUFFIX_LENGTH,
  LINK_ALLOWANCE_MAX,
  deriveSubdomainKey,
  linkAllowanceProblem,
  normaliseAppName,
  randomSuffix,
  slugify,
  subdomainKeyProblem,
} from './app-rules';

describe('subdomain keys', () => {
  it.each(['abc', 'a1b', '123', 'my-app', 'a-b-c', 'a'.repeat(63), 'test', 'my-test-app', 'x--y'])(
    'accepts %j',
    (key) => {
      expect(subdomainKeyProblem(key)).toBeNull();
    },
  );

  it.each([
    ['ab', /3-63 characters/],
    ['a'.repeat(64), /3-63 characters/],
    ['', /3-63 characters/],
    ['My-app', /lowercase/],
    ['my_app', /lowercase/],
    ['my.app', /lowercase/],
    ['my app', /lowercase/],
    ['café', /lowercase/],
    ['-app', /start and end/],
    ['app-', /start and end/],
    ['---', /start and end/],
    ['my-test', /-test/],
    ['app-test', /-test/],
  ])('refuses %j', (key, reason) => {
    expect(subdomainKeyProblem(key)).toMatch(reason);
  });
});

describe('slugify', () => {
  it.each([
    ['My App', 'my-app'],
    ['  Acme,   Inc.  ', 'acme-inc'],
    ['Café Crème', 'cafe-creme'],
    ['Straße Ærø', 'strasse-aero'],
    ['___', ''],
    ['日本語', ''],
    ['Rock & Roll 2', 'rock-roll-2'],
  ])('%j -> %j', (name, slug) => {
    expect(slugify(name)).toBe(slug);
  });
});

describe('deriveSubdomainKey', () => {
  it('is the slug plus a hyphen and the suffix', () => {
    expect(deriveSubdomainKey('My App', 'x7k2p9')).toBe('my-app-x7k2p9');
  });

  it('falls back to "app" when nothing of the name survives', () => {
    expect(deriveSubdomainKey('日本語', 'abc123')).toBe('app-abc123');
  });

  it('cuts long names to 63 characters without leaving a hyphen before the suffix', () => {
    const key = deriveSubdomainKey(`${'a'.repeat(55)} bcd`, 'zzzzzz');
    expect(key).toBe(`${'a'.repeat(55)}-zzzzzz`);
    expect(subdomainKeyProblem(key)).toBeNull();
    expect(deriveSubdomainKey('x'.repeat(300), 'zzzzzz')).toHaveLength(63);
  });

  it('never derives a key ending in -test', () => {
    expect(subdomainKeyProblem(deriveSubdomainKey('test', 'abcdef'))).toBeNull();
    expect(deriveSubdomainKey('My Test', 'abcdef')).toBe('my-test-abcdef');
  });

  it.each([
    'My App',
    'a',
    '',
    '---',
    'Ünïcödé ünd Straße',
    'x'.repeat(500),
    `${'b'.repeat(56)}-test`,
    '🚀 Rocket',
  ])('always derives a valid key from %j', (name) => {
    for (let i = 0; i < 50; i++) {
      expect(subdomainKeyProblem(deriveSubdomainKey(name))).toBeNull();
    }
  });

  it('draws random suffixes of a-z 0-9', () => {
    const suffixes = new Set(Array.from({ length: 200 }, () => randomSuffix()));
    expect(suffixes.size).toBe(200);
    for (const suffix of suffixes) {
      expect(suffix).toMatch(new RegExp(`^[a-z0-9]{${DERIVED_SUFFIX_LENGTH}}$`));
    }
  });
});

describe('app names', () => {
  it('trims', () => {
    expect(normaliseAppName('  Acme  ')).toEqual({ name: 'Acme' });
  });

  it.each([
    ['', /empty/],
    ['   ', /empty/],
    ['x'.repeat(101), /at most 100/],
    ['a\nb', /control/],
    ['a\u001b[31mb', /control/],
  ])('refuses %j', (raw, problem) => {
    const result = normaliseAppName(raw);
    expect('problem' in result && result.problem).toMatch(problem);
  });

  it('counts characters as a reader does, not UTF-16 units', () => {
    const hundred = '🚀👍🏽é'.repeat(33) + 'e\u0301';
    expect(normaliseAppName(hundred)).toEqual({ name: hundred });
    expect(normaliseAppName(`${hundred}x`)).toEqual({
      problem: expect.stringMatching(/at most 100/),
    });
  });

  it('caps names made of stacked combining marks', () => {
    expect(normaliseAppName(`a${'\u0301'.repeat(1000)}`)).toEqual({
      problem: expect.stringMatching(/at most 100/),
    });
  });
});

describe('link allowance', () => {
  it.each([null, 0, 1, 1000, LINK_ALLOWANCE_MAX])('accepts %j', (allowance) => {
    expect(linkAllowanceProblem(allowance)).toBeNull();
  });

  it.each([-1, 1.5, Number.NaN, Infinity, LINK_ALLOWANCE_MAX + 1])('refuses %j', (allowance) => {
    expect(linkAllowanceProblem(allowance)).toMatch(/whole number/);
  });
});
