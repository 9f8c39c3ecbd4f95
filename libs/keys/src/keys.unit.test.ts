import {
  generateInstallSecret,
  generatePublishableKey,
  generateSecretKey,
  hashInstallSecret,
  hashSecretKey,
  isInstallSecret,
  parseApiKey,
  parseSecretKey,
  randomBase62,
} from './index';

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

describe('publishable keys', () => {
  it('generates keys of the documented form for each environment', () => {
    expect(generatePublishableKey('live')).toMatch(/^ls_pk_live_[0-9A-Za-z]{40}$/);
    expect(generatePublishableKey('test')).toMatch(/^ls_pk_test_[0-9A-Za-z]{40}$/);
  });

  it('never repeats a key', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generatePublishableKey('test')));
    expect(keys.size).toBe(1000);
  });

  it('are hashed like secret keys: the SHA-256 of the whole text', () => {
    const key = generatePublishableKey('live');
    expect(hashSecretKey(key)).toEqual(hashSecretKey(key));
    expect(hashSecretKey(key)).toHaveLength(32);
    // Same random part, other type: another key, another hash.
    expect(hashSecretKey(key)).not.toEqual(hashSecretKey(key.replace('ls_pk_', 'ls_sk_')));
  });
});

describe('parseApiKey', () => {
  it.each([
    ['secret', 'live'],
    ['secret', 'test'],
    ['publishable', 'live'],
    ['publishable', 'test'],
  ] as const)('reads a %s %s key', (type, environment) => {
    const key =
      type === 'secret' ? generateSecretKey(environment) : generatePublishableKey(environment);
    expect(parseApiKey(key)).toEqual({ type, environment });
  });

  it('takes 32 to 128 random characters, like secret keys', () => {
    expect(parseApiKey('ls_pk_test_' + 'Z'.repeat(32))).toEqual({
      type: 'publishable',
      environment: 'test',
    });
    expect(parseApiKey('ls_pk_live_' + '9'.repeat(128))).toEqual({
      type: 'publishable',
      environment: 'live',
    });
  });

  it.each([
    '',
    'ls_pk_live_' + 'a'.repeat(31),
    'ls_pk_live_' + 'a'.repeat(129),
    'ls_xk_live_' + 'a'.repeat(40),
    'ls_pk_prod_' + 'a'.repeat(40),
    'ls_PK_live_' + 'a'.repeat(40),
    'ls_pk_live_' + 'a'.repeat(39) + '-',
    'ls_pk_live_' + 'a'.repeat(40) + '\n',
    ' ls_pk_live_' + 'a'.repeat(40),
    'ls_pklive_' + 'a'.repeat(40),
  ])('rejects malformed key %j', (text) => {
    expect(parseApiKey(text)).toBeNull();
  });

  it('parseSecretKey refuses a publishable key that parseApiKey reads', () => {
    const key = generatePublishableKey('live');
    expect(parseApiKey(key)).not.toBeNull();
    expect(parseSecretKey(key)).toBeNull();
  });
});

describe('install secrets', () => {
  it('are 40 base62 characters, never repeated, and hashed with SHA-256', () => {
    const secrets = new Set(Array.from({ length: 1000 }, () => generateInstallSecret()));
    expect(secrets.size).toBe(1000);
    for (const secret of secrets) expect(isInstallSecret(secret)).toBe(true);
    expect(hashInstallSecret('abc').toString('hex')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
  });

  it.each([
    '',
    'short',
    'a'.repeat(31),
    'a'.repeat(129),
    `${'a'.repeat(39)}!`,
    ` ${'a'.repeat(40)}`,
  ])('refuses %j as one', (text) => {
    expect(isInstallSecret(text)).toBe(false);
  });
});
