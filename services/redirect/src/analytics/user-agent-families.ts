import type { BrowserFamily, OsFamily, Platform } from '@linkservice/contracts';
import { isbot } from 'isbot';
import { LRUCache } from 'lru-cache';
import { UAParser } from 'ua-parser-js';

/** What a user agent is reduced to: families only, never versions or the string itself. */
export interface UserAgentFamilies {
  platform: Platform;
  os: OsFamily;
  browser: BrowserFamily;
  /** A crawler or script (isbot): its clicks go to the bot figures, not the people's. */
  bot: boolean;
}

/** ua-parser-js' OS names -> our families. */
const OS_BY_NAME: Record<string, OsFamily> = {
  ios: 'ios',
  ipados: 'ios',
  android: 'android',
  windows: 'windows',
  'mac os': 'macos',
  macos: 'macos',
  linux: 'linux',
  ubuntu: 'linux',
  debian: 'linux',
  fedora: 'linux',
  'chromium os': 'chromeos',
  'chrome os': 'chromeos',
};

/** ua-parser-js' browser names (lower-cased) -> our families; in-app browsers first. */
const BROWSER_BY_NAME: Record<string, BrowserFamily> = {
  chrome: 'chrome',
  'mobile chrome': 'chrome',
  'chrome headless': 'chrome',
  chromium: 'chrome',
  safari: 'safari',
  'mobile safari': 'safari',
  firefox: 'firefox',
  'mobile firefox': 'firefox',
  edge: 'edge',
  'samsung browser': 'samsung',
  'samsung internet': 'samsung',
  opera: 'opera',
  'opera mobi': 'opera',
  'opera touch': 'opera',
  facebook: 'facebook',
  instagram: 'instagram',
  tiktok: 'tiktok',
  snapchat: 'snapchat',
  'chrome webview': 'webview',
  webkit: 'webview',
};

const IN_FACEBOOK = /\bFBA[NV]\//;

function platformOf(os: OsFamily, deviceType: string | undefined): Platform {
  if (os === 'ios') return 'ios';
  if (os === 'android') return 'android';
  if (deviceType === 'mobile' || deviceType === 'tablet') return 'other';
  if (os === 'windows' || os === 'macos' || os === 'linux' || os === 'chromeos') return 'desktop';
  return 'other';
}

/** Parses a user agent into families (pure; `UserAgentClassifier` caches it). */
export function familiesOf(userAgent: string | undefined): UserAgentFamilies {
  if (userAgent === undefined || userAgent === '') {
    return { platform: 'other', os: 'other', browser: 'other', bot: false };
  }
  const parsed = new UAParser(userAgent).getResult();
  const os = OS_BY_NAME[(parsed.os.name ?? '').toLowerCase()] ?? 'other';
  // Facebook's in-app browser on iOS reads as plain WebKit to the parser; its FBAN/FBAV mark is
  // what tells it apart.
  const browser = IN_FACEBOOK.test(userAgent)
    ? 'facebook'
    : (BROWSER_BY_NAME[(parsed.browser.name ?? '').toLowerCase()] ?? 'other');
  return { platform: platformOf(os, parsed.device.type), os, browser, bot: isbot(userAgent) };
}

/**
 * `familiesOf` behind an LRU cache: a handful of user agents make most of a day's traffic, and
 * parsing one costs tens of microseconds. The cache holds user agents in memory only.
 */
export class UserAgentClassifier {
  private readonly cache: LRUCache<string, UserAgentFamilies>;

  constructor(maxEntries = 10_000) {
    this.cache = new LRUCache({ max: maxEntries });
  }

  classify(userAgent: string | undefined): UserAgentFamilies {
    if (userAgent === undefined) return familiesOf(userAgent);
    let families = this.cache.get(userAgent);
    if (families === undefined) {
      families = familiesOf(userAgent);
      this.cache.set(userAgent, families);
    }
    return families;
  }
}
