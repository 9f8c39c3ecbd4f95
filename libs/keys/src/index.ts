import { createHash, randomInt } from 'node:crypto';

export type KeyEnvironment = 'live' | 'test';

/**
 * `secret`: the server API (`ls_sk_…`), held by the customer's servers. `publishable`: the app
 * interface under /api/v1/sdk (`ls_pk_…`), shipped inside apps and so public.
 */
export type KeyType = 'secret' | 'publishable';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 40;

const PREFIX_OF: Record<KeyType, string> = { secret: 'sk', publishable: 'pk' };

/**
 * `ls_<sk|pk>_<live|test>_<32+ base62>`; capped so junk never gets hashed. The text names the
 * key's type and environment; the stored record must agree with both.
 */
const KEY_PATTERN = /^ls_(sk|pk)_(live|test)_[0-9A-Za-z]{32,128}$/;

/** Uniform random base62 text from the CSPRNG (randomInt rejects modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62.charAt(randomInt(62));
  return out;
}

function generateKey(type: KeyType, environment: KeyEnvironment): string {
  return `ls_${PREFIX_OF[type]}_${environment}_${randomBase62(RANDOM_LENGTH)}`;
}

export function generateSecretKey(environment: KeyEnvironment): string {
  return generateKey('secret', environment);
}

export function generatePublishableKey(environment: KeyEnvironment): string {
  return generateKey('publishable', environment);
}

/** What a well-formed key's text says about it. */
export interface ParsedKey {
  type: KeyType;
  environment: KeyEnvironment;
}

/** The type and environment a well-formed key of either kind names, or null for anything else. */
export function parseApiKey(text: string): ParsedKey | null {
  const match = KEY_PATTERN.exec(text);
  if (!match) return null;
  return {
    type: match[1] === 'pk' ? 'publishable' : 'secret',
    environment: match[2] as KeyEnvironment,
  };
}

/** The environment a well-formed secret key names, or null for anything else (publishable too). */
export function parseSecretKey(secret: string): { environment: KeyEnvironment } | null {
  const parsed = parseApiKey(secret);
  return parsed?.type === 'secret' ? { environment: parsed.environment } : null;
}

/**
 * SHA-256 of a key's whole text, secret or publishable: the only form in which a key is ever
 * stored or looked up.
 */
export function hashSecretKey(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}
