import { randomBytes } from 'node:crypto';
import { generateEncryptionKey, parseEncryptionKey, SecretBox } from './secret-box';
import { generateSigningSecret } from './signing-secret';

describe('SecretBox', () => {
  const key = randomBytes(32);

  test('opens what it sealed; each seal differs', () => {
    const box = new SecretBox(key);
    const secret = generateSigningSecret();
    const sealed = box.seal(secret);
    expect(sealed).toMatch(/^v1\.[\w-]{8}\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain(secret.slice(6));
    expect(box.seal(secret)).not.toBe(sealed);
    expect(box.open(sealed)).toBe(secret);
  });

  test('a box with another key cannot open it', () => {
    const sealed = new SecretBox(key).seal('whsec_abc');
    expect(() => new SecretBox(randomBytes(32)).open(sealed)).toThrow(/unknown key/);
  });

  test('after a key rotation, the previous key still opens what it sealed', () => {
    const sealed = new SecretBox(key).seal('whsec_abc');
    const rotated = new SecretBox(randomBytes(32), [key]);
    expect(rotated.open(sealed)).toBe('whsec_abc');
    expect(rotated.seal('x').split('.')[1]).not.toBe(sealed.split('.')[1]);
  });

  test('a tampered value does not open', () => {
    const box = new SecretBox(key);
    const [version, id, iv, body] = box.seal('whsec_abc').split('.');
    const bytes = Buffer.from(body, 'base64url');
    bytes[0] ^= 1;
    expect(() => box.open([version, id, iv, bytes.toString('base64url')].join('.'))).toThrow();
    const otherIv = randomBytes(12).toString('base64url');
    expect(() => box.open([version, id, otherIv, body].join('.'))).toThrow();
    expect(() => box.open('whsec_abc')).toThrow(/not a sealed/);
  });

  test('encryption keys are 32 bytes of base64', () => {
    expect(parseEncryptionKey(generateEncryptionKey())).toHaveLength(32);
    expect(parseEncryptionKey(randomBytes(16).toString('base64'))).toBeUndefined();
  });
});
