import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Decodes a WEBHOOK_ENCRYPTION_KEY value: 32 bytes, base64 (or base64url). */
export function parseEncryptionKey(text: string): Buffer | undefined {
  const key = Buffer.from(text.trim(), 'base64');
  return key.length === 32 ? key : undefined;
}

/** A new random WEBHOOK_ENCRYPTION_KEY value (for `pnpm start` and tests). */
export function generateEncryptionKey(): string {
  return randomBytes(32).toString('base64');
}

function keyIdOf(key: Buffer): string {
  return createHash('sha256').update(key).digest('base64url').slice(0, 8);
}

/**
 * Webhook signing secrets at rest: AES-256-GCM under the operator's key, as
 * `v1.<key id>.<iv>.<ciphertext+tag>` (base64url). Signing needs the secret itself (HMAC), so
 * it cannot be hashed like an API key; a database dump without the key holds nothing usable,
 * and the tag makes a tampered or swapped value fail to open. The key id (a hash prefix, not
 * the key) lets an operator rotate the key: the new key seals, the previous ones still open
 * what they sealed.
 */
export class SecretBox {
  private readonly sealing: { id: string; key: Buffer };
  private readonly opening: Map<string, Buffer>;

  constructor(key: Buffer, previousKeys: readonly Buffer[] = []) {
    this.sealing = { id: keyIdOf(key), key };
    this.opening = new Map([key, ...previousKeys].map((k) => [keyIdOf(k), k]));
  }

  seal(plaintext: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.sealing.key, iv);
    const body = Buffer.concat([
      cipher.update(plaintext, 'utf8'),
      cipher.final(),
      cipher.getAuthTag(),
    ]);
    return ['v1', this.sealing.id, iv.toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The plaintext; throws when no configured key sealed it or it was tampered with. */
  open(sealed: string): string {
    const parts = sealed.split('.');
    if (parts.length !== 4 || parts[0] !== 'v1') throw new Error('not a sealed webhook secret');
    const [, keyId, iv, body] = parts;
    const key = this.opening.get(keyId);
    if (!key) throw new Error(`webhook secret sealed by an unknown key (${keyId})`);
    const bytes = Buffer.from(body, 'base64url');
    const decipher = createDecipheriv(ALGORITHM, key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    return Buffer.concat([
      decipher.update(bytes.subarray(0, bytes.length - TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  }
}
