import { ConfigError } from '@linkservice/config';
import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { generateReceiptSigningKey } from '@linkservice/keys';
import { loadConfig } from './config';

/** The webhook encryption key, which every load below needs beside what it tests. */
const webhookKey = { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('base64') };

/** The variables without a default. */
const required = { RECEIPT_SIGNING_KEY: generateReceiptSigningKey(), ...webhookKey };

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig(required);
    expect(config).toMatchObject({
      GATEWAY_PORT: 8080,
      CREATION_LIMIT_PER_HOUR: 300,
      CREATION_TIMEOUT_MS: 10_000,
      SDK_RATE_LIMIT_PER_MINUTE: 600,
      SHUTDOWN_GRACE_MS: 10_000,
      TRUST_PROXY: false,
      LINK_DOMAIN: 'links.localhost',
      REDIS_PREFIX: 'ls',
    });
  });

  it.each([
    ['true', true],
    ['false', false],
    ['2', 2],
    ['loopback, 10.0.0.0/8', 'loopback, 10.0.0.0/8'],
  ])('reads TRUST_PROXY=%j', (value, expected) => {
    expect(loadConfig({ ...required, TRUST_PROXY: value }).TRUST_PROXY).toEqual(expected);
  });

  it('reads SDK_RATE_LIMIT_PER_MINUTE', () => {
    expect(
      loadConfig({ ...required, SDK_RATE_LIMIT_PER_MINUTE: '5' }).SDK_RATE_LIMIT_PER_MINUTE,
    ).toBe(5);
  });

  it.each(['0', '-1', '1.5', 'many'])('refuses SDK_RATE_LIMIT_PER_MINUTE=%j', (value) => {
    expect(() => loadConfig({ ...required, SDK_RATE_LIMIT_PER_MINUTE: value })).toThrow(
      /SDK_RATE_LIMIT_PER_MINUTE/,
    );
  });

  it('lists every bad variable at once', () => {
    let caught: unknown;
    try {
      loadConfig({
        ...required,
        GATEWAY_PORT: '99999',
        CREATION_LIMIT_PER_HOUR: '0',
        CREATION_TIMEOUT_MS: 'x',
      });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const problems = (caught as ConfigError).problems.join('\n');
    for (const name of ['GATEWAY_PORT', 'CREATION_LIMIT_PER_HOUR', 'CREATION_TIMEOUT_MS']) {
      expect(problems).toContain(name);
    }
  });

  describe('RECEIPT_SIGNING_KEY', () => {
    it('is required, and the error says what to give', () => {
      expect(() => loadConfig({})).toThrow(
        /RECEIPT_SIGNING_KEY: is required: an Ed25519 private key/,
      );
    });

    it('reads an Ed25519 PKCS#8 PEM, also with its line breaks escaped as \\n', () => {
      const pem = generateReceiptSigningKey();
      expect(
        loadConfig({ ...webhookKey, RECEIPT_SIGNING_KEY: pem }).RECEIPT_SIGNING_KEY
          .asymmetricKeyType,
      ).toBe('ed25519');
      const oneLine = pem.trim().replaceAll('\n', '\\n');
      expect(oneLine).not.toContain('\n');
      expect(
        loadConfig({ ...webhookKey, RECEIPT_SIGNING_KEY: oneLine }).RECEIPT_SIGNING_KEY
          .asymmetricKeyType,
      ).toBe('ed25519');
    });

    it('refuses another kind of key, and never repeats the text it was given', () => {
      const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
        .privateKey.export({ type: 'pkcs8', format: 'pem' })
        .toString();
      for (const [value, message] of [
        [rsa, /must be an Ed25519 key, not rsa/],
        ['not-a-key-SECRETISH', /must be a PKCS#8 PEM private key/],
      ] as const) {
        let caught: unknown;
        try {
          loadConfig({ ...webhookKey, RECEIPT_SIGNING_KEY: value });
        } catch (error) {
          caught = error;
        }
        expect((caught as Error).message).toMatch(message);
        expect((caught as Error).message).not.toContain('SECRETISH');
        expect((caught as Error).message).not.toContain('PRIVATE KEY-----\n');
      }
    });
  });

  describe('a development RECEIPT_SIGNING_KEY (pnpm start)', () => {
    it('is made only when asked for and the variable is unset, and says so', () => {
      const made = loadConfig({ ...webhookKey }, { developmentReceiptKey: true });
      expect(made.RECEIPT_SIGNING_KEY.asymmetricKeyType).toBe('ed25519');
      expect(made.receiptSigningKeyGenerated).toBe(true);

      const pem = generateReceiptSigningKey();
      const given = loadConfig(
        { ...webhookKey, RECEIPT_SIGNING_KEY: pem },
        { developmentReceiptKey: true },
      );
      expect(given.receiptSigningKeyGenerated).toBe(false);
      expect(given.RECEIPT_SIGNING_KEY.export({ type: 'pkcs8', format: 'pem' })).toBe(pem);
      expect(loadConfig(required).receiptSigningKeyGenerated).toBe(false);
    });

    it('still refuses a bad key it was given', () => {
      expect(() =>
        loadConfig({ ...webhookKey, RECEIPT_SIGNING_KEY: 'nope' }, { developmentReceiptKey: true }),
      ).toThrow(/RECEIPT_SIGNING_KEY: must be a PKCS#8 PEM private key/);
    });
  });

  describe('RECEIPT_PREVIOUS_PUBLIC_KEYS', () => {
    const publicPem = () =>
      createPublicKey(generateReceiptSigningKey())
        .export({ type: 'spki', format: 'pem' })
        .toString();

    it('is none by default, and reads public keys one after the other, escaped or not', () => {
      expect(loadConfig(required).RECEIPT_PREVIOUS_PUBLIC_KEYS).toEqual([]);
      const two = `${publicPem()}${publicPem()}`;
      expect(
        loadConfig({ ...required, RECEIPT_PREVIOUS_PUBLIC_KEYS: two }).RECEIPT_PREVIOUS_PUBLIC_KEYS,
      ).toHaveLength(2);
      const escaped = two.trim().replaceAll('\n', '\\n');
      expect(
        loadConfig({ ...required, RECEIPT_PREVIOUS_PUBLIC_KEYS: escaped })
          .RECEIPT_PREVIOUS_PUBLIC_KEYS,
      ).toHaveLength(2);
    });

    it.each([
      ['text without a key', 'not a key', /must be PEM public keys/],
      [
        'a key of another kind',
        generateKeyPairSync('ec', { namedCurve: 'P-256' })
          .publicKey.export({ type: 'spki', format: 'pem' })
          .toString(),
        /key 1 must be an Ed25519 key, not ec/,
      ],
    ])('refuses %s', (_name, value, message) => {
      expect(() => loadConfig({ ...required, RECEIPT_PREVIOUS_PUBLIC_KEYS: value })).toThrow(
        message,
      );
    });
  });
});
