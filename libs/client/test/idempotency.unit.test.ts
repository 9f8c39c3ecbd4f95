import { isValidIdempotencyKey } from '../src';
import {
  checkIdempotencyKey,
  uuidFromRandomBytes,
  webCryptoKeyGenerator,
} from '../src/idempotency';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('idempotency keys', () => {
  it('takes 1-255 printable ASCII characters, as the gateway does', () => {
    expect(isValidIdempotencyKey('a')).toBe(true);
    expect(isValidIdempotencyKey(' ~order 7/x:0')).toBe(true);
    expect(isValidIdempotencyKey('k'.repeat(255))).toBe(true);
    expect(isValidIdempotencyKey('')).toBe(false);
    expect(isValidIdempotencyKey('k'.repeat(256))).toBe(false);
    expect(isValidIdempotencyKey('caf\u00e9')).toBe(false);
    expect(isValidIdempotencyKey('line\nbreak')).toBe(false);
    expect(isValidIdempotencyKey('tab\t')).toBe(false);
    expect(checkIdempotencyKey('order-7')).toBe('order-7');
    expect(() => checkIdempotencyKey('')).toThrow(TypeError);
  });

  it('makes version 4 UUIDs from random bytes', () => {
    expect(uuidFromRandomBytes(new Uint8Array(16))).toBe('00000000-0000-4000-8000-000000000000');
    expect(uuidFromRandomBytes(new Uint8Array(16).fill(0xff))).toBe(
      'ffffffff-ffff-4fff-bfff-ffffffffffff',
    );
    expect(() => uuidFromRandomBytes(new Uint8Array(8))).toThrow(RangeError);
  });

  it("uses the runtime's randomUUID, else getRandomValues, else makes none", () => {
    const generate = webCryptoKeyGenerator();
    expect(generate).toBeDefined();
    const keys = new Set(Array.from({ length: 100 }, () => generate!()));
    expect(keys.size).toBe(100);
    for (const key of keys) expect(key).toMatch(UUID_V4);

    const fromBytes = webCryptoKeyGenerator({
      getRandomValues: (array) => array.fill(7),
    });
    expect(fromBytes?.()).toBe('07070707-0707-4707-8707-070707070707');

    // Called on its object: Web Crypto methods throw "Illegal invocation" when detached.
    const crypto = {
      prefix: 'bound',
      randomUUID(this: { prefix: string }) {
        return `${this.prefix}-uuid`;
      },
    };
    expect(webCryptoKeyGenerator(crypto)?.()).toBe('bound-uuid');

    expect(webCryptoKeyGenerator({})).toBeUndefined();
    expect(webCryptoKeyGenerator(undefined)).toBeDefined(); // the default parameter: globalThis
  });
});
