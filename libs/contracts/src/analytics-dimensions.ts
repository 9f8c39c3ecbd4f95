/**
 * Click analytics: the dimensions a counted click is rolled up by, their closed value lists and
 * the values that stand for "not known", "none" and "capped". One table for the redirect (which
 * derives the values), the flush (which caps them) and the gateway (which validates filters and
 * names them in answers).
 *
 * Nothing here is personal: a click is reduced to these values before it leaves the request.
 */

/** Platforms a user agent is reduced to. */
export const PLATFORMS = ['ios', 'android', 'desktop', 'other'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** Operating system families (never versions). */
export const OS_FAMILIES = [
  'ios',
  'android',
  'windows',
  'macos',
  'linux',
  'chromeos',
  'other',
] as const;
export type OsFamily = (typeof OS_FAMILIES)[number];

/** Browser families (never versions); in-app browsers of the big social apps are their own. */
export const BROWSER_FAMILIES = [
  'chrome',
  'safari',
  'firefox',
  'edge',
  'samsung',
  'opera',
  'facebook',
  'instagram',
  'tiktok',
  'snapchat',
  'webview',
  'other',
] as const;
export type BrowserFamily = (typeof BROWSER_FAMILIES)[number];

/**
 * How the link was reached: `link`, a tap of the plain link URL; `qr`, a scan of its QR code
 * (the URL with the scan marker, qr-scan.ts).
 */
export const CLICK_SOURCES = ['link', 'qr'] as const;
export type ClickSource = (typeof CLICK_SOURCES)[number];

/** A country no database or trusted header could name (ISO 3166-1 alpha-2 otherwise). */
export const UNKNOWN_COUNTRY = 'unknown';
/** The referrer of a click that sent none (or one that is not an http(s) URL). */
export const DIRECT_REFERRER = 'direct';
/** A UTM parameter the tapped URL did not carry. */
export const NO_UTM = 'none';
/** The bucket of values beyond a dimension's cap for one link (or app) and day. */
export const OTHER_VALUE = 'other';

/** UTM values are cut to this many characters (after normalising). */
export const MAX_UTM_LENGTH = 100;
/** A referrer host longer than a DNS name can be is not one. */
export const MAX_REFERRER_LENGTH = 253;

/**
 * Distinct values kept per dimension with many possible values, per link and UTC day (and per
 * app and environment and day for the app's own rollup); later values of that day count as
 * `other`. The low-cardinality dimensions (country, platform, os, browser, source) have closed
 * lists.
 */
export const LINK_DAY_VALUE_CAP = 50;
export const APP_DAY_VALUE_CAP = 500;

/**
 * The dimensions, in their fixed order: the API's name, the rollup tables' column, and whether
 * the dimension's values are capped per day.
 */
export const ANALYTICS_DIMENSIONS = [
  { name: 'country', column: 'country', capped: false },
  { name: 'platform', column: 'platform', capped: false },
  { name: 'os', column: 'os', capped: false },
  { name: 'browser', column: 'browser', capped: false },
  { name: 'referrer', column: 'referrer', capped: true },
  { name: 'utmSource', column: 'utm_source', capped: true },
  { name: 'utmMedium', column: 'utm_medium', capped: true },
  { name: 'utmCampaign', column: 'utm_campaign', capped: true },
  // Last: added after the others had shipped (the pending hash's field grew by one at its end).
  { name: 'source', column: 'source', capped: false },
] as const;

export type AnalyticsDimension = (typeof ANALYTICS_DIMENSIONS)[number]['name'];
export type AnalyticsColumn = (typeof ANALYTICS_DIMENSIONS)[number]['column'];
export const ANALYTICS_DIMENSION_NAMES = ANALYTICS_DIMENSIONS.map(
  (dimension) => dimension.name,
) as readonly AnalyticsDimension[];

/** A counted click's values, one per dimension (in ANALYTICS_DIMENSIONS' order). */
export type ClickDimensions = Record<AnalyticsColumn, string>;

/** `interval` values of the analytics API, and the longest range each allows. */
export const ANALYTICS_INTERVALS = ['hour', 'day', 'month'] as const;
export type AnalyticsInterval = (typeof ANALYTICS_INTERVALS)[number];
export const MAX_HOURLY_RANGE_DAYS = 31;
export const MAX_ANALYTICS_RANGE_DAYS = 800;
export const DEFAULT_ANALYTICS_LIMIT = 10;
export const MAX_ANALYTICS_LIMIT = 100;
