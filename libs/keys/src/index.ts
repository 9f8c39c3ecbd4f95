import { createHash, randomInt } from 'node:crypto';

export type KeyEnvironment = 'live' | 'test';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 40;

/** `ls_sk_live_<32+ base62>` / `ls_sk_test_<32+ base62>`; capped so junk never gets hashed. */
const SECRET_KEY_PATTERN = /^ls_sk_(live|test)_[0-9A-Za-z]{32,128}$/;

/** Uniform random base62 text from the CSPRNG (randomInt rejects modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62.charAt(randomInt(62));
  return out;
}

export function generateSecretKey(environment: KeyEnvironment): string {
  return `ls_sk_${environment}_${randomBase62(RANDOM_LENGTH)}`;
}

/** The environment a well-formed secret key names, or null for anything malformed. */
export function parseSecretKey(secret: string): { environment: KeyEnvironment } | null {
  const match = SECRET_KEY_PATTERN.exec(secret);
  return match ? { environment: match[1] as KeyEnvironment } : null;
}

/** SHA-256 of the secret: the only form in which a key is ever stored or looked up. */
export function hashSecretKey(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}
