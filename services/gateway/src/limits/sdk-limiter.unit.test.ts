import { createHash } from 'node:crypto';
import { generatePublishableKey, hashSecretKey } from '@linkservice/keys';
import { budgetKey } from './sdk-limiter';

describe('budgetKey', () => {
  const hash = hashSecretKey(generatePublishableKey('live'));

  it('is the SHA-256 of the key hash followed by the address', () => {
    const expected = createHash('sha256')
      .update(Buffer.concat([hash, Buffer.from('203.0.113.9', 'utf8')]))
      .digest('base64url');
    expect(budgetKey(hash, '203.0.113.9')).toBe(expected);
  });

  it('names one budget per key and address', () => {
    const other = hashSecretKey(generatePublishableKey('live'));
    const names = new Set([
      budgetKey(hash, '203.0.113.9'),
      budgetKey(hash, '203.0.113.10'),
      budgetKey(hash, '::ffff:203.0.113.9'),
      budgetKey(other, '203.0.113.9'),
    ]);
    expect(names.size).toBe(4);
    expect(budgetKey(hash, '203.0.113.9')).toBe(budgetKey(Buffer.from(hash), '203.0.113.9'));
  });

  it('holds neither the key hash nor the address', () => {
    const name = budgetKey(hash, '198.51.100.7');
    expect(name).toMatch(/^[A-Za-z0-9_-]{43}$/);
    for (const part of [hash.toString('hex'), hash.toString('base64url'), '198.51.100.7']) {
      expect(name).not.toContain(part);
    }
  });
});
