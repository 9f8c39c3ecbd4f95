/**
 * Idempotency keys: a create sent with one is answered once; repeats with the same key and body
 * get the first answer replayed (`Idempotent-Replayed: true`) for 24 hours.
 */

/** The request header of `POST /links` and `POST /links/batch`. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** The response header of a replayed answer. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/** 1–255 printable ASCII characters, as the gateway takes them. */
const VALID_KEY = /^[\x20-\x7E]{1,255}$/;

export function isValidIdempotencyKey(key: string): boolean {
  return VALID_KEY.test(key);
}

/**
 * `key` when the gateway would take it; a TypeError otherwise. Checked here because fetch itself
 * throws on some bad header values (non-ASCII), which would read as a network failure.
 */
export function checkIdempotencyKey(key: string): string {
  if (!isValidIdempotencyKey(key)) {
    throw new TypeError('idempotencyKey must be 1-255 printable ASCII characters');
  }
  return key;
}

interface CryptoLike {
  randomUUID?: () => string;
  getRandomValues?: (array: Uint8Array) => Uint8Array;
}

/**
 * A generator of random (version 4) UUIDs from the runtime's Web Crypto, or undefined where there
 * is none (Node 18 without `--experimental-global-webcrypto`, some embedded runtimes): then the
 * client sends no key by itself and never retries a create. Never Math.random: two keys that
 * collide within 24 hours would answer one create with the other's link or a 422.
 */
export function webCryptoKeyGenerator(
  crypto: CryptoLike | undefined = (globalThis as { crypto?: CryptoLike }).crypto,
): (() => string) | undefined {
  const { randomUUID, getRandomValues } = crypto ?? {};
  if (typeof randomUUID === 'function') return () => randomUUID.call(crypto);
  if (typeof getRandomValues === 'function') {
    return () => uuidFromRandomBytes(getRandomValues.call(crypto, new Uint8Array(16)));
  }
  return undefined;
}

/** A version 4 UUID from 16 random bytes (RFC 9562 section 5.4). */
export function uuidFromRandomBytes(bytes: Uint8Array): string {
  if (bytes.length !== 16) throw new RangeError('a UUID takes 16 bytes');
  const b = Array.from(bytes);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const hex = b.map((byte) => byte.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
