import { encodeDimensions, parseDimensionField } from './click-analytics';

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
});
