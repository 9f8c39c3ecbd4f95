import { generateSecretKey, hashSecretKey, parseSecretKey, randomBase62 } from './index';

describe('secret keys', () => {
  it('generates keys of the documented form for each environment', () => {
    expect(generateSecretKey('live')).toMatch(/^ls_sk_live_[0-9A-Za-z]{32,}$/);
    expect(generateSecretKey('test')).toMatch(/^ls_sk_test_[0-9A-Za-z]{32,}$/);
  });

  it('never repeats a key', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateSecretKey('live')));
    expect(keys.size).toBe(1000);
  });

  it('reads the environment from a well-formed key', () => {
    expect(parseSecretKey(generateSecretKey('test'))).toEqual({ environment: 'test' });
  });

  it.each([
    '',
    'ls_sk_live_short',
    'ls_pk_live_' + 'a'.repeat(40),
    'ls_sk_prod_' + 'a'.repeat(40),
    'ls_sk_live_' + 'a'.repeat(39) + '!',
    ' ls_sk_live_' + 'a'.repeat(40),
    'ls_sk_live_' + 'a'.repeat(129),
  ])('rejects malformed key %j', (secret) => {
    expect(parseSecretKey(secret)).toBeNull();
  });

  it('hashes with SHA-256', () => {
    expect(hashSecretKey('abc').toString('hex')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });

  it('draws from the whole base62 alphabet', () => {
    expect(new Set(randomBase62(5000)).size).toBe(62);
  });
});
