import { randomInt } from 'node:crypto';

// decisions.md "Apps": 3-63 of a-z 0-9 -, starting and ending with a letter or digit, never
// ending in -test (`<key>-test.<domain>` is the test host of the key without the suffix).
export const SUBDOMAIN_KEY_MIN_LENGTH = 3;
export const SUBDOMAIN_KEY_MAX_LENGTH = 63;
export const APP_NAME_MAX_LENGTH = 100;
/** apps.link_allowance is a Postgres integer. */
export const LINK_ALLOWANCE_MAX = 2_147_483_647;

const SUFFIX_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
/** 36^6 ≈ 2.2e9 suffixes: a retry after a collision practically always succeeds. */
export const DERIVED_SUFFIX_LENGTH = 6;

/** Why `key` is not an acceptable subdomain key, or null when it is. */
export function subdomainKeyProblem(key: string): string | null {
  if (key.length < SUBDOMAIN_KEY_MIN_LENGTH || key.length > SUBDOMAIN_KEY_MAX_LENGTH) {
    return `must be ${SUBDOMAIN_KEY_MIN_LENGTH}-${SUBDOMAIN_KEY_MAX_LENGTH} characters long`;
  }
  if (!/^[a-z0-9-]+$/.test(key)) return 'may contain only lowercase letters a-z, digits and -';
  if (key.startsWith('-') || key.endsWith('-')) return 'must start and end with a letter or digit';
  if (key.endsWith('-test')) return 'must not end in -test (that is the test host of another key)';
  return null;
}

/** Latin letters that NFKD leaves alone, spelled as they are usually transliterated. */
const LETTERS_WITHOUT_DECOMPOSITION: Record<string, string> = {
  ß: 'ss',
  æ: 'ae',
  œ: 'oe',
  ø: 'o',
  ł: 'l',
  đ: 'd',
  þ: 'th',
};

/**
 * The name reduced to a-z 0-9 and single hyphens: accents dropped ("Café" -> "cafe", "Straße" -> "strasse"), every
 * other run of characters becomes one hyphen, none at either end. May be empty.
 */
export function slugify(name: string): string {
  return name
    .toLowerCase()
    .replace(/[ßæœøłđþ]/g, (letter) => LETTERS_WITHOUT_DECOMPOSITION[letter] ?? '')
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

export function randomSuffix(): string {
  let suffix = '';
  for (let i = 0; i < DERIVED_SUFFIX_LENGTH; i++) {
    suffix += SUFFIX_ALPHABET.charAt(randomInt(SUFFIX_ALPHABET.length));
  }
  return suffix;
}

/**
 * `<slug>-<suffix>`, cut so the whole stays within 63 characters. The suffix carries no hyphen, so
 * the result ends in a letter or digit and can never end in -test; an empty slug becomes `app`.
 */
export function deriveSubdomainKey(name: string, suffix: string = randomSuffix()): string {
  const room = SUBDOMAIN_KEY_MAX_LENGTH - 1 - suffix.length;
  const slug = slugify(name).slice(0, room).replace(/-+$/, '');
  return `${slug || 'app'}-${suffix}`;
}

/** The trimmed name, or why it cannot be one. */
export function normaliseAppName(raw: string): { name: string } | { problem: string } {
  const name = raw.trim();
  if (name === '') return { problem: 'must not be empty' };
  // Characters as a reader counts them (an emoji or an accented letter is one), with a cap on
  // code units too so stacked combining marks cannot make a "short" name huge.
  if (name.length > APP_NAME_MAX_LENGTH * 8 || graphemeCount(name) > APP_NAME_MAX_LENGTH) {
    return { problem: `must be at most ${APP_NAME_MAX_LENGTH} characters` };
  }
  // A newline or escape sequence in a name would break every one-line listing of apps.
  if (/\p{Cc}/u.test(name)) return { problem: 'must not contain control characters' };
  return { name };
}

const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' });

function graphemeCount(text: string): number {
  return Array.from(graphemes.segment(text)).length;
}

/** null (unlimited) or an integer 0..2^31-1. */
export function linkAllowanceProblem(allowance: number | null): string | null {
  if (allowance === null) return null;
  if (!Number.isInteger(allowance) || allowance < 0 || allowance > LINK_ALLOWANCE_MAX) {
    return `must be a whole number from 0 to ${LINK_ALLOWANCE_MAX}, or none`;
  }
  return null;
}
