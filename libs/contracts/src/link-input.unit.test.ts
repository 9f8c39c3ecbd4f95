import { parseLinkCreate, parseLinkPatch } from './link-input';
import { deepLinkDataRule } from './link-input-rules';
import { RESERVED_ALIASES } from './reserved-aliases';

const NOW = new Date('2030-06-15T12:00:00.000Z');
const URL_OK = 'https://example.com/landing';

function create(body: Record<string, unknown>, now = NOW) {
  return parseLinkCreate({ webFallbackUrl: URL_OK, ...body }, now);
}

function fieldErrorsOf(result: ReturnType<typeof parseLinkCreate>) {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.draft)}`);
  return result.fieldErrors;
}

function draftOf(result: ReturnType<typeof parseLinkCreate>) {
  if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.fieldErrors)}`);
  return result.draft;
}

/** `http://h/` padded with path characters to exactly `length` characters. */
function urlOfLength(length: number): string {
  const base = 'https://example.com/';
  return base + 'a'.repeat(length - base.length);
}

/** A deepLinkData object whose JSON.stringify is exactly `length` characters. */
function dataOfLength(length: number): Record<string, unknown> {
  const overhead = JSON.stringify({ k: '' }).length;
  return { k: 'x'.repeat(length - overhead) };
}

/**
 * `{"a":[[…[innermost]…]]}` with `levels` arrays: 6 + 2 × levels characters of JSON, plus the
 * innermost value's JSON when there is one.
 */
function nestedInArrays(levels: number, innermost?: unknown): Record<string, unknown> {
  let value: unknown[] = innermost === undefined ? [] : [innermost];
  for (let level = 1; level < levels; level++) value = [value];
  return { a: value };
}

/** The fields a create may set and a patch may change: all but the alias, which never changes. */
const CHANGEABLE_FIELDS = [
  'webFallbackUrl',
  'iosFallbackUrl',
  'deepLinkData',
  'title',
  'campaign',
  'channel',
  'feature',
  'tags',
  'expiresAt',
];

/** Every changeable field that may be null, set to null: what a link with none of them holds. */
const NULLED_FIELDS = {
  iosFallbackUrl: null,
  deepLinkData: null,
  title: null,
  campaign: null,
  channel: null,
  feature: null,
  expiresAt: null,
};

describe('parseLinkCreate', () => {
  it('needs only webFallbackUrl and fills every omitted field', () => {
    expect(draftOf(parseLinkCreate({ webFallbackUrl: URL_OK }, NOW))).toEqual({
      alias: null,
      webFallbackUrl: URL_OK,
      ...NULLED_FIELDS,
      tags: [],
    });
  });

  it('keeps every field it was given', () => {
    const given = {
      alias: 'Spring-Sale_2030',
      iosFallbackUrl: 'http://apps.example.com/ios?x=1#y',
      deepLinkData: { screen: 'promo', nested: { a: [1, 2, null] } },
      title: 'Spring sale',
      campaign: 'spring',
      channel: 'email',
      feature: 'share',
      tags: ['a', 'b'],
      expiresAt: '2031-01-01T00:00:00Z',
    };
    expect(draftOf(create(given))).toEqual({ ...given, webFallbackUrl: URL_OK });
  });

  it('requires webFallbackUrl', () => {
    expect(fieldErrorsOf(parseLinkCreate({}, NOW))).toEqual({ webFallbackUrl: 'is required' });
    expect(fieldErrorsOf(parseLinkCreate({ webFallbackUrl: null }, NOW))).toEqual({
      webFallbackUrl: 'is required',
    });
  });

  it('names every failing field at once', () => {
    const errors = fieldErrorsOf(
      parseLinkCreate(
        {
          alias: '-bad',
          iosFallbackUrl: 'ftp://example.com',
          deepLinkData: [1],
          title: 5,
          campaign: 'x'.repeat(201),
          channel: true,
          feature: {},
          tags: 'a',
          expiresAt: '2020-01-01T00:00:00Z',
          id: 'lnk_1',
          color: 'red',
        },
        NOW,
      ),
    );
    expect(Object.keys(errors).sort()).toEqual(
      ['alias', ...CHANGEABLE_FIELDS, 'id', 'color'].sort(),
    );
    for (const message of Object.values(errors)) expect(message.length).toBeGreaterThan(5);
  });

  describe('alias', () => {
    const good = [
      'a',
      '7',
      'A-b_c',
      'promo2030',
      'x'.repeat(128),
      '9_-',
      // Reserved words are whole aliases only.
      'admins',
      'api-v2',
      'www1',
    ];
    it.each(good)('accepts %s', (alias) => {
      expect(draftOf(create({ alias })).alias).toBe(alias);
    });

    const bad: [string, unknown][] = [
      ['empty', ''],
      ['129 characters', 'x'.repeat(129)],
      ['a leading -', '-promo'],
      ['a leading _', '_promo'],
      ['a space', 'pro mo'],
      ['a slash', 'pro/mo'],
      ['a dot', 'pro.mo'],
      ['a non-ASCII letter', 'promö'],
      ['a trailing newline', 'promo\n'],
      ['a number', 12],
      ['an object', { a: 1 }],
      ['an array', ['promo']],
      ['a boolean', false],
    ];
    it.each(bad)('refuses %s', (_, alias) => {
      expect(fieldErrorsOf(create({ alias }))).toEqual({
        alias:
          'must be 1-128 characters of letters, digits, - and _, starting with a letter or digit',
      });
    });

    it('treats null as omitted', () => {
      expect(draftOf(create({ alias: null })).alias).toBeNull();
    });

    it('reserves exactly the words decisions.md lists', () => {
      expect([...RESERVED_ALIASES].sort()).toEqual(
        [
          'api',
          'app',
          'apps',
          'admin',
          'assets',
          'static',
          'health',
          'healthz',
          'readyz',
          'metrics',
          'robots',
          'well-known',
          'apple-app-site-association',
          'assetlinks',
          'login',
          'logout',
          'signup',
          'settings',
          'help',
          'support',
          'www',
          'links',
          'link',
          'new',
          'edit',
          'archive',
          'expired',
          'not-found',
          '404',
          '500',
        ].sort(),
      );
    });

    it.each([...RESERVED_ALIASES])('refuses the reserved word %s', (word) => {
      expect(fieldErrorsOf(create({ alias: word }))).toEqual({
        alias: 'is a reserved word; choose another alias',
      });
    });

    it.each(['API', 'Admin', 'WWW', 'Well-Known', 'NOT-FOUND', 'Apple-App-Site-Association'])(
      'compares reserved words case-insensitively (%s)',
      (alias) => {
        expect(fieldErrorsOf(create({ alias })).alias).toBe(
          'is a reserved word; choose another alias',
        );
      },
    );
  });

  describe.each(['webFallbackUrl', 'iosFallbackUrl'])('%s', (field) => {
    const good = [
      'http://example.com',
      'https://example.com/',
      'HTTPS://EXAMPLE.COM/Path?q=1#frag',
      'https://user:pass@example.com:8443/a',
      'https://127.0.0.1/x',
      'https://[::1]/x',
      'https://bücher.example/straße',
      urlOfLength(2048),
    ];
    it.each(good)('accepts %s', (url) => {
      expect(draftOf(create({ [field]: url }))[field as 'webFallbackUrl']).toBe(url);
    });

    const bad: [string, unknown][] = [
      ['2049 characters', urlOfLength(2049)],
      ['a relative path', '/landing'],
      ['no scheme', 'example.com'],
      ['ftp', 'ftp://example.com'],
      ['javascript', 'javascript:alert(1)'],
      ['mailto', 'mailto:a@example.com'],
      ['http without slashes', 'http:example.com'],
      ['no host', 'https://'],
      ['an empty host with a path', 'http:///path'],
      ['a backslash for the host', 'https:\\\\evil.example'],
      ['leading whitespace', ' https://example.com'],
      ['inner whitespace', 'https://example.com/a b'],
      ['a control character', 'https://example.com/\u0007'],
      ['a NUL', 'https://example.com/\u0000'],
      ['an invalid host', 'https://exa mple.com'],
      ['an empty string', ''],
      ['a number', 42],
      ['an object', { href: URL_OK }],
    ];
    it.each(bad)('refuses %s', (_, url) => {
      const errors = fieldErrorsOf(create({ [field]: url }));
      expect(Object.keys(errors)).toEqual([field]);
      expect(errors[field]).toMatch(/^must be an absolute http or https URL with a host/);
    });
  });

  it('lets iosFallbackUrl be null', () => {
    expect(draftOf(create({ iosFallbackUrl: null })).iosFallbackUrl).toBeNull();
  });

  describe('deepLinkData', () => {
    it.each([
      ['an empty object', {}],
      ['nested values', { a: { b: [1, 'two', true, null] }, emoji: '🎉' }],
      ['exactly 8000 characters', dataOfLength(8000)],
    ])('accepts %s', (_, data) => {
      expect(draftOf(create({ deepLinkData: data })).deepLinkData).toEqual(data);
    });

    it('accepts null', () => {
      expect(draftOf(create({ deepLinkData: null })).deepLinkData).toBeNull();
    });

    it.each([
      ['an array', [1, 2]],
      ['an empty array', []],
      ['a string', '{"a":1}'],
      ['a number', 3],
      ['a boolean', true],
    ])('refuses %s', (_, data) => {
      expect(fieldErrorsOf(create({ deepLinkData: data }))).toEqual({
        deepLinkData: 'must be a JSON object or null',
      });
    });

    it('refuses 8001 characters of JSON', () => {
      expect(fieldErrorsOf(create({ deepLinkData: dataOfLength(8001) }))).toEqual({
        deepLinkData: 'must be at most 8000 characters once serialised as JSON',
      });
    });

    // {"k":""} is 8 characters; an emoji is two UTF-16 units, a control character 6 (\u0001).
    it.each([
      ['3996 emoji (8000 units)', { k: '🎉'.repeat(3996) }],
      ['1332 control characters (8000 once escaped)', { k: '\u0001'.repeat(1332) }],
    ])('accepts %s, counting UTF-16 units as JSON.stringify writes them', (_, data) => {
      expect(JSON.stringify(data)).toHaveLength(8000);
      expect(draftOf(create({ deepLinkData: data })).deepLinkData).toEqual(data);
    });

    it.each([
      ['4000 emoji (8008 units)', { k: '🎉'.repeat(4000) }, 8008],
      ['3995 emoji and 3 letters (8001 units)', { k: '🎉'.repeat(3995) + 'abc' }, 8001],
      ['1333 control characters (8006 once escaped)', { k: '\u0001'.repeat(1333) }, 8006],
    ])('refuses %s, counting UTF-16 units as JSON.stringify writes them', (_, data, length) => {
      expect(JSON.stringify(data)).toHaveLength(length);
      expect(fieldErrorsOf(create({ deepLinkData: data }))).toEqual({
        deepLinkData: 'must be at most 8000 characters once serialised as JSON',
      });
    });

    it.each([
      ['a NUL in a value', { a: 'x\u0000y' }],
      ['a NUL in a key', { 'a\u0000': 1 }],
      ['a lone surrogate deep inside', { a: [{ b: '\ud800' }] }],
    ])('refuses %s, which Postgres jsonb cannot store', (_, data) => {
      expect(Object.keys(fieldErrorsOf(create({ deepLinkData: data })))).toEqual(['deepLinkData']);
    });

    describe('deeply nested', () => {
      const tooLong = {
        ok: false,
        message: 'must be at most 8000 characters once serialised as JSON',
      };
      const unstorable = {
        ok: false,
        message: 'must not contain NUL characters or unpaired UTF-16 surrogates',
      };

      it('accepts 3997 levels of arrays, exactly 8000 characters', () => {
        const data = nestedInArrays(3997);
        expect(JSON.stringify(data)).toHaveLength(8000);
        expect(deepLinkDataRule(data, NOW)).toEqual({ ok: true, value: data });
      });

      it('accepts a surrogate pair at the bottom of 3900 levels', () => {
        const data = nestedInArrays(3900, { '🎉': '🎉' });
        expect(deepLinkDataRule(data, NOW)).toEqual({ ok: true, value: data });
      });

      it.each([
        ['3997 levels around a 0 (8001 characters)', 3997, 0],
        ['3999 levels (8004 characters)', 3999, undefined],
        ['4000 levels (8006 characters)', 4000, undefined],
        ['100,000 levels', 100_000, undefined],
      ])('refuses %s as too long, without overflowing the stack', (_, levels, innermost) => {
        expect(deepLinkDataRule(nestedInArrays(levels, innermost), NOW)).toEqual(tooLong);
      });

      it('refuses 100,000 levels of objects as too long', () => {
        let data: Record<string, unknown> = {};
        for (let level = 1; level < 100_000; level++) data = { a: data };
        expect(deepLinkDataRule(data, NOW)).toEqual(tooLong);
      });

      it.each([
        ['a NUL in a key', { 'k\u0000': 1 }],
        ['a NUL in a value', 'x\u0000'],
        ['a lone high surrogate in a key', { '\ud800': 1 }],
        ['a lone low surrogate in a value', '\udc00'],
        ['a reversed surrogate pair in a value', '\udc00\ud800'],
      ])('refuses %s at the bottom of 3900 levels', (_, innermost) => {
        const data = nestedInArrays(3900, innermost);
        expect(JSON.stringify(data).length).toBeLessThanOrEqual(8000);
        expect(deepLinkDataRule(data, NOW)).toEqual(unstorable);
      });

      it('reports too long before unstorable when both apply', () => {
        expect(deepLinkDataRule(nestedInArrays(100_000, 'x\u0000'), NOW)).toEqual(tooLong);
      });
    });
  });

  describe.each(['title', 'campaign', 'channel', 'feature'])('%s', (field) => {
    it.each([
      ['empty', ''],
      ['200 characters', 't'.repeat(200)],
      ['200 emoji', '🎉'.repeat(200)],
      ['null', null],
    ])('accepts %s', (_, value) => {
      expect(draftOf(create({ [field]: value }))[field as 'title']).toBe(value);
    });

    it.each([
      ['201 characters', 't'.repeat(201)],
      ['201 emoji', '🎉'.repeat(201)],
      ['a number', 1],
      ['a boolean', true],
      ['an array', ['a']],
      ['an object', {}],
    ])('refuses %s', (_, value) => {
      expect(fieldErrorsOf(create({ [field]: value }))).toEqual({
        [field]: 'must be a string of at most 200 characters, or null',
      });
    });

    it('refuses a NUL character', () => {
      expect(Object.keys(fieldErrorsOf(create({ [field]: 'a\u0000b' })))).toEqual([field]);
    });
  });

  describe('tags', () => {
    const tags = (n: number, prefix = 't') => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

    it.each([
      ['none', [], []],
      ['one of 1 character', ['a'], ['a']],
      ['one of 60 characters', ['x'.repeat(60)], ['x'.repeat(60)]],
      ['25', tags(25), tags(25)],
      ['26, keeping the first 25', tags(26), tags(25)],
      ['100, keeping the first 25', tags(100), tags(25)],
      ['duplicates, first kept', ['b', 'a', 'b', 'c', 'a'], ['b', 'a', 'c']],
      ['case-different tags as different', ['VIP', 'vip'], ['VIP', 'vip']],
      [
        'duplicates before cutting to 25',
        [...tags(20), ...tags(20), ...tags(10, 'u')],
        [...tags(20), ...tags(5, 'u')],
      ],
    ])('accepts %s', (_, given, kept) => {
      expect(draftOf(create({ tags: given })).tags).toEqual(kept);
    });

    it.each([
      ['null', null],
      ['a string', 'a,b'],
      ['an object', { 0: 'a' }],
    ])('refuses %s as the list', (_, given) => {
      expect(fieldErrorsOf(create({ tags: given }))).toEqual({
        tags: 'must be an array of strings',
      });
    });

    it.each([
      ['an empty tag', ['a', 'b', 'c', ''], 3],
      ['a 61-character tag', ['x'.repeat(61)], 0],
      ['a number', ['a', 5], 1],
      ['null', [null], 0],
      ['a nested array', [['a']], 0],
      ['a NUL', ['a\u0000'], 0],
      ['an invalid tag past the 25th', [...tags(30), ''], 30],
    ])('refuses %s and names its position', (_, given, index) => {
      expect(fieldErrorsOf(create({ tags: given }))).toEqual({
        tags: `each tag must be a string of 1-60 characters without NUL characters; tags[${index}] is not`,
      });
    });
  });

  describe('expiresAt', () => {
    it.each([
      ['Z', '2031-02-03T04:05:06Z', '2031-02-03T04:05:06Z'],
      ['+hh:mm', '2031-02-03T04:05:06+02:00', '2031-02-03T02:05:06Z'],
      ['-hh:mm', '2031-02-03T04:05:06-05:30', '2031-02-03T09:35:06Z'],
      ['-00:00', '2031-02-03T04:05:06-00:00', '2031-02-03T04:05:06Z'],
      ['an offset crossing midnight', '2031-01-01T01:00:00+03:00', '2030-12-31T22:00:00Z'],
      ['milliseconds, truncated', '2031-02-03T04:05:06.999Z', '2031-02-03T04:05:06Z'],
      ['microseconds, truncated', '2031-02-03T04:05:06.123456+01:00', '2031-02-03T03:05:06Z'],
      ['a comma fraction', '2031-02-03T04:05:06,5Z', '2031-02-03T04:05:06Z'],
      ['no seconds', '2031-02-03T04:05Z', '2031-02-03T04:05:00Z'],
      ['a leap day', '2032-02-29T00:00:00Z', '2032-02-29T00:00:00Z'],
      ['one second from now', '2030-06-15T12:00:01Z', '2030-06-15T12:00:01Z'],
      ['far away', '9999-12-31T23:59:59Z', '9999-12-31T23:59:59Z'],
      ['a zone without colon', '2031-02-03T04:05:06+0200', '2031-02-03T02:05:06Z'],
      ['an hour-only zone', '2031-02-03T04:05:06+02', '2031-02-03T02:05:06Z'],
      // ISO 8601 writes the end of a day as 24:00, which luxon reads as the next midnight.
      ['hour 24', '2031-02-03T24:00:00Z', '2031-02-04T00:00:00Z'],
    ])('accepts %s', (_, given, stored) => {
      expect(draftOf(create({ expiresAt: given })).expiresAt).toBe(stored);
    });

    describe('any ISO 8601 form with a zone', () => {
      // Early enough that every example, 2029-12-31 included, lies in the future.
      const before = new Date('2029-01-01T00:00:00Z');

      it.each([
        ['the basic format', '20300101T000000Z', '2030-01-01T00:00:00Z'],
        ['the basic format with an offset', '20300101T100000+0200', '2030-01-01T08:00:00Z'],
        ['a week date', '2030-W01-1T00:00:00Z', '2029-12-31T00:00:00Z'],
        ['a basic week date', '2030W011T000000Z', '2029-12-31T00:00:00Z'],
        ['an ordinal date', '2030-001T00:00:00Z', '2030-01-01T00:00:00Z'],
        ['the last day of a leap year as an ordinal', '2032-366T12:00:00Z', '2032-12-31T12:00:00Z'],
        ['lowercase t and z', '2030-01-01t00:00:00z', '2030-01-01T00:00:00Z'],
        ['±hh:mm', '2030-01-01T10:00:00+05:30', '2030-01-01T04:30:00Z'],
        ['±hhmm', '2030-01-01T10:00:00-0530', '2030-01-01T15:30:00Z'],
        ['±hh', '2030-01-01T10:00:00-02', '2030-01-01T12:00:00Z'],
        ['the largest offset', '2030-01-01T23:59:00+23:59', '2030-01-01T00:00:00Z'],
        ['hours and minutes only', '2030-01-01T10:30+01:00', '2030-01-01T09:30:00Z'],
        ['hours only', '2030-01-01T10Z', '2030-01-01T10:00:00Z'],
        [
          'nine fraction digits, truncated',
          '2030-01-01T00:00:00.999999999Z',
          '2030-01-01T00:00:00Z',
        ],
        ['24:00 at the end of a year', '2030-12-31T24:00Z', '2031-01-01T00:00:00Z'],
        ['an offset into year 9999', '9999-12-31T23:59:59+01:00', '9999-12-31T22:59:59Z'],
        ['the basic format, hours only', '20300101T10Z', '2030-01-01T10:00:00Z'],
        ['the basic format, hours and minutes', '20300101T1030-01', '2030-01-01T11:30:00Z'],
        ['the basic format with a fraction', '20300101T103000,5Z', '2030-01-01T10:30:00Z'],
        ['a basic ordinal date', '2030001T10Z', '2030-01-01T10:00:00Z'],
        ['a basic date with an extended offset', '20300101T1000+01:00', '2030-01-01T09:00:00Z'],
      ])('accepts %s', (_, given, stored) => {
        expect(draftOf(create({ expiresAt: given }, before)).expiresAt).toBe(stored);
      });

      it.each([
        ['no zone', '2030-01-01T00:00:00'],
        ['no zone, basic format', '20300101T000000'],
        ['no zone, hours only', '2030-01-01T10'],
        ['a date only', '2030-01-01'],
        ['a basic date only', '20300101'],
        ['a week date only', '2030-W01-1'],
        ['an ordinal date only', '2030-001'],
        ['a date only with Z', '2030-01-01Z'],
        ['a time only', '10:00:00Z'],
        ['a basic time only', '1000+02'],
        ['a T and a time only', 'T10:00:00Z'],
        ['a space instead of T', '2030-01-01 12:00:00Z'],
        ['garbage', 'garbage'],
        ['text after the zone', '2030-01-01T00:00:00Zx'],
        ['a trailing newline', '2030-01-01T00:00:00Z\n'],
        ['February 30', '2030-02-30T00:00:00Z'],
        ['hour 25', '2030-01-01T25:00:00Z'],
        ['24:00 and a second', '2030-01-01T24:00:01Z'],
        ['week 53 of a 52-week year', '2030-W53-1T00:00:00Z'],
        ['day 366 of a common year', '2030-366T00:00:00Z'],
        ['offset +24:00', '2030-01-01T00:00:00+24:00'],
        ['offset -2400', '2030-01-01T00:00:00-2400'],
        ['offset +24', '2030-01-01T00:00:00+24'],
        ['offset minute 60', '2030-01-01T00:00:00+05:60'],
        ['an IANA zone in brackets', '2030-01-01T00:00:00[Europe/Paris]'],
        ['Z with an IANA zone in brackets', '2030-01-01T00:00:00Z[Europe/Paris]'],
        ['a zone name', '2030-01-01T00:00:00UTC'],
        ['a five-digit year', '+010000-01-01T00:00:00Z'],
        ['an offset past year 9999', '9999-12-31T23:00:00-01:00'],
        ['a negative year', '-000001-01-01T00:00:00Z'],
        ['a year only', '2030T10Z'],
        ['a year and a month', '2030-01T10:00Z'],
        ['a basic year and month', '203001T10Z'],
        ['a week without its day', '2030-W01T10Z'],
        ['a basic week without its day', '2030W01T10Z'],
        ['a two-digit year', '30-01-01T10:00Z'],
        ['a one-digit month and day', '2030-1-1T10:00Z'],
        ['a lowercase w', '2030-w01-1T00:00:00Z'],
        ['a date mixing formats', '2030-0101T10:00Z'],
        ['a week date mixing formats', '2030-W011T10:00Z'],
        ['a time mixing formats', '2030-01-01T10:0000Z'],
        ['a date and a time mixing formats', '2030-0101T10:0000Z'],
        ['a basic date, an extended time', '20300101T10:00:00Z'],
        ['a basic ordinal date, an extended time', '2030001T10:00Z'],
        ['an extended date, a basic time', '2030-01-01T1000Z'],
        ['an extended week date, a basic time', '2030-W01-1T100000Z'],
        ['a fraction of an hour', '2030-01-01T10.5Z'],
        ['a fraction of a minute', '2030-01-01T10:30,5Z'],
        ['a fraction without digits', '2030-01-01T10:30:00.Z'],
      ])('refuses %s', (_, given) => {
        expect(fieldErrorsOf(create({ expiresAt: given }, before))).toEqual({
          expiresAt:
            'must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2030-01-31T12:00:00Z, or null',
        });
      });
    });

    it('accepts null', () => {
      expect(draftOf(create({ expiresAt: null })).expiresAt).toBeNull();
    });

    it.each([
      ['no zone', '2031-02-03T04:05:06'],
      ['a date only', '2031-02-03'],
      ['a space instead of T', '2031-02-03 04:05:06Z'],
      ['month 13', '2031-13-03T04:05:06Z'],
      ['February 29 of a common year', '2031-02-29T00:00:00Z'],
      ['April 31', '2031-04-31T00:00:00Z'],
      ['second 60', '2031-02-03T23:59:60Z'],
      ['a zone of 24 hours', '2031-02-03T04:05:06+24:00'],
      ['a human date', 'March 3, 2031'],
      ['epoch milliseconds', 1_900_000_000_000],
      ['an empty string', ''],
      ['an object', {}],
    ])('refuses %s', (_, given) => {
      expect(fieldErrorsOf(create({ expiresAt: given }))).toEqual({
        expiresAt:
          'must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2030-01-31T12:00:00Z, or null',
      });
    });

    it.each([
      ['the past', '2020-01-01T00:00:00Z'],
      ['exactly now', '2030-06-15T12:00:00Z'],
      ['now written in another zone', '2030-06-15T14:00:00+02:00'],
      ['a fraction of now that truncates to now', '2030-06-15T12:00:00.400Z'],
      ['one second ago', '2030-06-15T11:59:59Z'],
    ])('refuses %s', (_, given) => {
      expect(fieldErrorsOf(create({ expiresAt: given }))).toEqual({
        expiresAt: 'must be in the future',
      });
    });

    it('judges the future by the truncated second, not the fraction', () => {
      const now = new Date('2030-06-15T12:00:00.500Z');
      expect(fieldErrorsOf(create({ expiresAt: '2030-06-15T12:00:00.900Z' }, now))).toEqual({
        expiresAt: 'must be in the future',
      });
      expect(draftOf(create({ expiresAt: '2030-06-15T12:00:01.000Z' }, now)).expiresAt).toBe(
        '2030-06-15T12:00:01Z',
      );
    });
  });

  describe('fields a caller may not send', () => {
    it.each([
      'id',
      'url',
      'environment',
      'archivedAt',
      'createdAt',
      'updatedAt',
      'clickCount',
      'status',
    ])('names the server-set field %s', (field) => {
      expect(fieldErrorsOf(create({ [field]: 'x' }))).toEqual({
        [field]: 'is set by the server and cannot be sent',
      });
    });

    it.each(['color', 'Alias', 'web_fallback_url', 'toString', 'constructor', 'hasOwnProperty'])(
      'names the unknown field %s',
      (field) => {
        expect(fieldErrorsOf(create({ [field]: null }))).toEqual({
          [field]: 'is not a field of a link',
        });
      },
    );

    it('names a __proto__ field instead of letting it through', () => {
      const body = JSON.parse(`{"webFallbackUrl":"${URL_OK}","__proto__":{"x":1}}`) as Record<
        string,
        unknown
      >;
      const errors = fieldErrorsOf(parseLinkCreate(body, NOW));
      expect(Object.keys(errors)).toEqual(['__proto__']);
      expect(JSON.stringify(errors)).toBe('{"__proto__":"is not a field of a link"}');
    });
  });
});

describe('parseLinkPatch', () => {
  const current = { alias: 'promo' };

  function patch(body: Record<string, unknown>, now = NOW) {
    return parseLinkPatch(body, current, now);
  }

  function changesOf(result: ReturnType<typeof parseLinkPatch>) {
    if (!result.ok) throw new Error(`expected success, got ${JSON.stringify(result.fieldErrors)}`);
    return result.changes;
  }

  function patchErrorsOf(result: ReturnType<typeof parseLinkPatch>) {
    if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.changes)}`);
    return result.fieldErrors;
  }

  it('accepts {} as no change', () => {
    expect(changesOf(patch({}))).toEqual({});
  });

  it('returns only the fields sent, normalised by the create rules', () => {
    expect(
      changesOf(
        patch({
          title: 'New',
          tags: ['a', 'a', 'b'],
          expiresAt: '2031-01-01T00:00:00.750+01:00',
          deepLinkData: { a: 1 },
        }),
      ),
    ).toEqual({
      title: 'New',
      tags: ['a', 'b'],
      expiresAt: '2030-12-31T23:00:00Z',
      deepLinkData: { a: 1 },
    });
  });

  it('clears nullable fields with null', () => {
    expect(changesOf(patch({ ...NULLED_FIELDS }))).toEqual(NULLED_FIELDS);
  });

  it('replaces tags with an empty list', () => {
    expect(changesOf(patch({ tags: [] }))).toEqual({ tags: [] });
  });

  it('refuses null for webFallbackUrl', () => {
    expect(patchErrorsOf(patch({ webFallbackUrl: null }))).toEqual({
      webFallbackUrl: 'is required',
    });
  });

  it('accepts the current alias as no change', () => {
    expect(changesOf(patch({ alias: 'promo', title: 't' }))).toEqual({ title: 't' });
  });

  it.each([
    ['another alias', 'promo2'],
    ['a case variant', 'Promo'],
    ['null', null],
    ['an invalid alias', '-x'],
    ['a number', 5],
  ])('refuses %s for alias', (_, alias) => {
    expect(patchErrorsOf(patch({ alias }))).toEqual({
      alias: 'cannot be changed after creation',
    });
  });

  it('applies the create rules to every field and names all failures', () => {
    expect(
      Object.keys(
        patchErrorsOf(
          patch({
            webFallbackUrl: 'nope',
            iosFallbackUrl: 1,
            deepLinkData: [],
            title: 'x'.repeat(201),
            campaign: 'x'.repeat(201),
            channel: false,
            feature: [],
            tags: [''],
            expiresAt: '2030-06-15T12:00:00Z',
            status: 'archived',
            archivedAt: null,
            nope: 1,
          }),
        ),
      ).sort(),
    ).toEqual([...CHANGEABLE_FIELDS, 'status', 'archivedAt', 'nope'].sort());
  });

  it('uses the same limits as create', () => {
    expect(changesOf(patch({ title: 'x'.repeat(200), tags: Array(30).fill('x') }))).toEqual({
      title: 'x'.repeat(200),
      tags: ['x'],
    });
    expect(patchErrorsOf(patch({ expiresAt: '2020-01-01T00:00:00Z' }))).toEqual({
      expiresAt: 'must be in the future',
    });
  });
});
