import { z } from 'zod';
import { AddressPolicy, parseCidrList } from './address-policy';
import { STANDARD_RETRY_SCHEDULE_SECONDS } from './retry-schedule';
import { parseEncryptionKey, SecretBox } from './secret-box';

const KEY_HINT = '32 random bytes, base64 (openssl rand -base64 32)';

const encryptionKey = z
  .string({
    error: (issue) =>
      issue.input === undefined
        ? `is required: the key webhook signing secrets are encrypted with, ${KEY_HINT}`
        : `must be ${KEY_HINT}`,
  })
  .transform((text, ctx) => {
    const key = parseEncryptionKey(text);
    if (!key) {
      ctx.addIssue({ code: 'custom', message: `must be ${KEY_HINT}` });
      return z.NEVER;
    }
    return key;
  });

const previousEncryptionKeys = z
  .string()
  .default('')
  .transform((text, ctx) => {
    const entries = text
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
    const keys = entries.map(parseEncryptionKey);
    if (keys.some((key) => key === undefined)) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a comma-separated list of keys, each ${KEY_HINT}`,
      });
      return z.NEVER;
    }
    return keys as Buffer[];
  });

const allowedCidrs = z
  .string()
  .default('')
  .transform((text, ctx) => {
    const parsed = parseCidrList(text);
    if (!parsed.ok) {
      ctx.addIssue({ code: 'custom', message: `not CIDR notation: ${parsed.invalid.join(', ')}` });
      return z.NEVER;
    }
    return parsed.cidrs;
  });

/**
 * The webhook settings the gateway (which saves endpoints and their secrets) and the worker
 * (which delivers) both read; spread into each service's schema.
 */
export const webhookSharedEnv = {
  /**
   * WEBHOOK_ENCRYPTION_KEY seals the endpoints' signing secrets (see SecretBox); the gateway and
   * the worker must have the same. WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: keys rotated out, which
   * still open the secrets they sealed.
   */
  WEBHOOK_ENCRYPTION_KEY: encryptionKey,
  WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: previousEncryptionKeys,
  /**
   * Private ranges webhooks may reach after all (comma-separated CIDR): on-premises receivers,
   * tests. Loopback, private, link-local, multicast and metadata addresses are refused otherwise.
   */
  WEBHOOK_ALLOWED_CIDRS: allowedCidrs,
};

/** WEBHOOK_RETRY_SCHEDULE: seconds before each attempt, comma-separated (the first is usually 0). */
export const retrySchedule = z
  .string()
  .default(STANDARD_RETRY_SCHEDULE_SECONDS.join(','))
  .transform((text, ctx) => {
    const seconds = text.split(',').map((entry) => Number(entry.trim()));
    if (seconds.length === 0 || seconds.some((value) => !Number.isFinite(value) || value < 0)) {
      ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of seconds (>= 0)' });
      return z.NEVER;
    }
    return seconds;
  });

interface WebhookSharedConfig {
  WEBHOOK_ENCRYPTION_KEY: Buffer;
  WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: Buffer[];
  WEBHOOK_ALLOWED_CIDRS: string[];
}

export function secretBoxOf(config: WebhookSharedConfig): SecretBox {
  return new SecretBox(config.WEBHOOK_ENCRYPTION_KEY, config.WEBHOOK_PREVIOUS_ENCRYPTION_KEYS);
}

export function addressPolicyOf(config: WebhookSharedConfig): AddressPolicy {
  return new AddressPolicy(config.WEBHOOK_ALLOWED_CIDRS);
}
