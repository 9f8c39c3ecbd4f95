import { createHmac, randomBytes } from 'node:crypto';
import { HmacKey } from './visitor-salts';

describe('HmacKey', () => {
  it.each([0, 16, 32, 64, 65, 200])('gives createHmac’s digest for a %i-byte key', (length) => {
    const key = randomBytes(length);
    const hmacKey = new HmacKey(key);
    // Short and long again: the reused buffer keeps nothing of an earlier, longer message.
    const messages = ['', '198.51.100.7\0Mozilla/5.0', 'é'.repeat(300), 'x'.repeat(5000), 'a'];
    for (const message of messages) {
      expect(hmacKey.hmac(message)).toEqual(createHmac('sha256', key).update(message).digest());
    }
  });
});
