import { randomBytes } from 'node:crypto';

/** Standard Webhooks' secret form: `whsec_` and base64 of the key bytes (here 32 random). */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_HOURS = 24;
