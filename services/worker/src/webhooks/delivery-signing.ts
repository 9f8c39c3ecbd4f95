import { Webhook } from 'standardwebhooks';

/** The User-Agent of every delivery, so receivers can tell (and allow) our requests. */
export const WEBHOOK_USER_AGENT = 'linkservice-webhooks';

/**
 * A delivery's request headers, Standard Webhooks' way: `webhook-id` is the event's id, the
 * same on every attempt (receivers deduplicate on it); `webhook-timestamp` is this attempt's
 * time in seconds; `webhook-signature` holds one `v1,<base64 HMAC>` per secret, space-separated:
 * during a rotation the previous secret signs too, so a receiver still holding it verifies.
 */
export function deliveryHeaders(options: {
  eventId: string;
  sentAt: Date;
  body: string;
  secrets: readonly string[];
}): Record<string, string> {
  const { eventId, sentAt, body, secrets } = options;
  const signatures = secrets.map((secret) => new Webhook(secret).sign(eventId, sentAt, body));
  return {
    'content-type': 'application/json',
    'user-agent': WEBHOOK_USER_AGENT,
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
