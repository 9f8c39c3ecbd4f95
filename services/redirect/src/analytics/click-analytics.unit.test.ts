import {
  encodeDimensions,
  parseClickField,
  parseDimensionField,
  visitorsField,
} from './click-analytics';

describe('dimension fields', () => {
  it('round-trip through the pending hash field', () => {
    const values = {
      country: 'DE',
      platform: 'ios',
      os: 'ios',
      browser: 'safari',
      referrer: 'www.example.org',
      utm_source: 'news letter',
      utm_medium: 'email',
      utm_campaign: 'none',
      source: 'qr',
    };
    const field = `lnk_1${encodeDimensions(493_000, true, values)}`;
    expect(parseDimensionField(field)).toEqual({
      linkId: 'lnk_1',
      hour: 493_000,
      bot: true,
      ...values,
    });
  });

  it('tell a link id (its click count) apart', () => {
    expect(parseDimensionField('lnk_1')).toBeNull();
  });

  it('read a field of the previous release (no source) as a tap of the link (compat)', () => {
    // Exactly what encodeDimensions wrote before `source` was added.
    const field = [
      'lnk_1',
      '493000',
      'h',
      'DE',
      'ios',
      'ios',
      'safari',
      'direct',
      'news',
      'none',
      'none',
    ].join('\u001f');
    expect(parseDimensionField(field)).toEqual({
      linkId: 'lnk_1',
      hour: 493_000,
      bot: false,
      country: 'DE',
      platform: 'ios',
      os: 'ios',
      browser: 'safari',
      referrer: 'direct',
      utm_source: 'news',
      utm_medium: 'none',
      utm_campaign: 'none',
      source: 'link',
    });
  });

  it('refuse a source outside the closed list', () => {
    const values = {
      country: 'DE',
      platform: 'ios',
      os: 'ios',
      browser: 'safari',
      referrer: 'direct',
      utm_source: 'none',
      utm_medium: 'none',
      utm_campaign: 'none',
      source: 'nfc',
    };
    expect(parseDimensionField(`lnk_1${encodeDimensions(1, false, values)}`)).toBeNull();
  });
});

describe('parseClickField', () => {
  it('tells clicks, dimensions and new-visitor marks apart', () => {
    expect(parseClickField('lnk_1')).toEqual({ kind: 'clicks', linkId: 'lnk_1' });
    expect(parseClickField(visitorsField('lnk_1', 20420))).toEqual({
      kind: 'visitors',
      linkId: 'lnk_1',
      day: 20420,
    });
    const values = {
      country: 'unknown',
      platform: 'other',
      os: 'other',
      browser: 'other',
      referrer: 'direct',
      utm_source: 'none',
      utm_medium: 'none',
      utm_campaign: 'none',
      source: 'link',
    };
    expect(parseClickField(`lnk_1${encodeDimensions(7, false, values)}`)).toEqual({
      kind: 'dimensions',
      linkId: 'lnk_1',
      hour: 7,
      bot: false,
      ...values,
    });
    expect(parseClickField('lnk_1\u001fx')).toBeNull();
  });
});
