import type { KeyObject } from 'node:crypto';
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  randomInt,
} from 'node:crypto';

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
  return sha256(secret);
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * An installation's erasure secret (app-interface.md): 40 base62 characters (238 bits), shown
 * once in the install report's 201 and stored only as its SHA-256 (`hashInstallSecret`).
 */
export function generateInstallSecret(): string {
  return randomBase62(RANDOM_LENGTH);
}

/** What an install secret looks like; capped so junk never gets hashed. */
const INSTALL_SECRET_PATTERN = /^[0-9A-Za-z]{32,128}$/;

export function isInstallSecret(text: string): boolean {
  return INSTALL_SECRET_PATTERN.test(text);
}

/** SHA-256 of an install secret: the only form in which it is stored or looked up. */
export function hashInstallSecret(secret: string): Buffer {
  return sha256(secret);
}

/**
 * A new Ed25519 private key as PKCS#8 PEM: the form RECEIPT_SIGNING_KEY takes. For development
 * (`pnpm start` without one) and tests; production keys are made once and kept in a Secret.
 */
export function generateReceiptSigningKey(): string {
  return generateKeyPairSync('ed25519')
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString();
}

/**
 * RECEIPT_SIGNING_KEY's text as a private key: a PKCS#8 PEM of an Ed25519 key. Accepts `\n`
 * escapes for the line breaks (some secret stores keep one line). Throws a message that never
 * repeats the key.
 */
export function readReceiptSigningKey(pem: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: pem.replace(/\\n/g, '\n'), format: 'pem' });
  } catch {
    throw new Error('must be a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)');
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new Error(`must be an Ed25519 key, not ${key.asymmetricKeyType ?? 'unknown'}`);
  }
  return key;
}

const PUBLIC_KEY_PEM = /-----BEGIN PUBLIC KEY-----[\s\S]*?-----END PUBLIC KEY-----/g;

/**
 * RECEIPT_PREVIOUS_PUBLIC_KEYS's text as public keys: Ed25519 SPKI PEMs one after the other
 * (`openssl pkey -in old.pem -pubout`), `\n` escapes accepted; empty text is none. Throws for
 * text that holds no such key, or a key of another kind.
 */
export function readReceiptVerificationKeys(text: string): KeyObject[] {
  const pems = text.replace(/\\n/g, '\n').match(PUBLIC_KEY_PEM) ?? [];
  if (pems.length === 0) {
    if (text.trim() === '') return [];
    throw new Error('must be PEM public keys (-----BEGIN PUBLIC KEY-----), one after the other');
  }
  return pems.map((pem, index) => {
    let key: KeyObject;
    try {
      key = createPublicKey({ key: pem, format: 'pem' });
    } catch {
      throw new Error(`key ${index + 1} is not a PEM public key`);
    }
    if (key.asymmetricKeyType !== 'ed25519') {
      throw new Error(
        `key ${index + 1} must be an Ed25519 key, not ${key.asymmetricKeyType ?? 'unknown'}`,
      );
    }
    return key;
  });
}
