import { createHmac, randomBytes } from 'node:crypto';
import { HmacKey } from './visitor-salts';

describe('HmacKey', () => {
  it.each([0, 16, 32, 64, 65, 200])('gives createHmac’s digest for a %i-byte key', (length) => {
    const key = randomBytes(length);
    for (const message of ['', '198.51.100.7\0Mozilla/5.0', 'é'.repeat(300)]) {
      expect(new HmacKey(key).hmac(message)).toEqual(
        createHmac('sha256', key).update(message).digest(),
      );
    }
  });
});
