/**
 * The events an endpoint can subscribe to, in the order the API document lists them. Each is
 * written to the outbox by the statement that makes its change (see outbox.sql.ts).
 */
export const WEBHOOK_EVENT_TYPES = [
  'link.created',
  'link.updated',
  'link.archived',
  'install.matched',
  'install.erased',
] as const;

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export function isWebhookEventType(value: string): value is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);
}
