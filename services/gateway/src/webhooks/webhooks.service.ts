import { formatTimestamp } from '@linkservice/contracts';
import type { WebhookDeliveryStatus, WebhookDisabledReason } from '@linkservice/db';
import { newId } from '@linkservice/db';
import type {
  AddressPolicy,
  RefusedAddressClass,
  ResolveHost,
  SecretBox,
  WebhookEventType,
} from '@linkservice/webhooks';
import {
  checkDestination,
  generateSigningSecret,
  PREVIOUS_SECRET_HOURS,
  resolveWithSystem,
} from '@linkservice/webhooks';
import type { AuthContext } from '../auth/auth-context';
import type { FieldErrors } from '../http/errors';
import { PLAUSIBLE_ID } from '../links/links.service';
import type { DeliveriesQuery } from './webhook-params';
import {
  MAX_WEBHOOKS_PER_ENVIRONMENT,
  parseWebhookCreate,
  parseWebhookPatch,
} from './webhook-params';
import type {
  AttemptEntry,
  DeliveryRow,
  WebhookRow,
  WebhookScope,
  WebhooksRepository,
} from './webhooks.repository';

/** An endpoint as the API shows it. */
export interface Webhook {
  id: string;
  url: string;
  description: string | null;
  eventTypes: WebhookEventType[];
  environment: WebhookScope['environment'];
  status: 'enabled' | 'disabled';
  disabledReason: WebhookDisabledReason | null;
  disabledAt: string | null;
  failingSince: string | null;
  previousSecretExpiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface WebhookDelivery {
  id: string;
  eventId: string;
  eventType: WebhookEventType;
  status: WebhookDeliveryStatus;
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  finishedAt: string | null;
  attemptLog: AttemptEntry[];
}

export interface DeliveryPage {
  deliveries: WebhookDelivery[];
  /** The `cursor` of the next page; null on the last. */
  nextCursor: string | null;
}

/** The endpoint and its signing secret: shown on create and rotate only. */
export interface WebhookWithSecret {
  webhook: Webhook;
  secret: string;
}

export type CreateOutcome =
  | ({ kind: 'created' } & WebhookWithSecret)
  | { kind: 'invalid'; fieldErrors: FieldErrors }
  | { kind: 'limit_reached' };

export type UpdateOutcome =
  | { kind: 'updated'; webhook: Webhook }
  | { kind: 'not_found' }
  | { kind: 'invalid'; fieldErrors: FieldErrors };

export type RetryOutcome =
  | { kind: 'retried'; delivery: WebhookDelivery }
  | { kind: 'no_webhook' }
  | { kind: 'no_delivery' }
  | { kind: 'disabled' };

const ADDRESS_CLASS_WORDS: Record<RefusedAddressClass, string> = {
  loopback: 'a loopback address',
  private: 'a private address',
  link_local: 'a link-local address',
  multicast: 'a multicast address',
  metadata: 'a cloud metadata address',
  unspecified: 'an unspecified address',
  reserved: 'a reserved address',
};

export function scopeOf(auth: AuthContext): WebhookScope {
  return { appId: auth.appId, environment: auth.environment };
}

function timestampOrNull(date: Date | null): string | null {
  return date ? formatTimestamp(date) : null;
}

function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.event_types as WebhookEventType[],
    environment: row.environment,
    status: row.disabled_at ? 'disabled' : 'enabled',
    disabledReason: row.disabled_reason,
    disabledAt: timestampOrNull(row.disabled_at),
    failingSince: timestampOrNull(row.failing_since),
    previousSecretExpiresAt: timestampOrNull(row.previous_secret_expires_at),
    createdAt: formatTimestamp(row.created_at),
    updatedAt: formatTimestamp(row.updated_at),
  };
}

function toDelivery(row: DeliveryRow): WebhookDelivery {
  return {
    id: row.id,
    eventId: row.event_id,
    eventType: row.event_type as WebhookEventType,
    status: row.status,
    attempts: row.attempts,
    createdAt: formatTimestamp(row.created_at),
    nextAttemptAt: row.status === 'pending' ? formatTimestamp(row.next_attempt_at) : null,
    finishedAt: timestampOrNull(row.finished_at),
    attemptLog: row.attempt_log,
  };
}

export interface WebhooksServiceOptions {
  /** Seals signing secrets at rest (WEBHOOK_ENCRYPTION_KEY). */
  secrets: SecretBox;
  /** Which addresses an endpoint's host may resolve to (WEBHOOK_ALLOWED_CIDRS). */
  addresses: AddressPolicy;
  /** The system resolver unless a test needs another. */
  resolve?: ResolveHost;
}

/**
 * Webhook endpoints of the caller's app and environment, and their deliveries. An endpoint of
 * another app or environment is "not found", exactly like a missing one. The signing secret is
 * shown on create and on rotation, never again; it is stored sealed.
 */
export class WebhooksService {
  private readonly secrets: SecretBox;
  private readonly addresses: AddressPolicy;
  private readonly resolve: ResolveHost;

  constructor(
    private readonly webhooks: WebhooksRepository,
    options: WebhooksServiceOptions,
  ) {
    this.secrets = options.secrets;
    this.addresses = options.addresses;
    this.resolve = options.resolve ?? resolveWithSystem;
  }

  /**
   * POST. Every bad field is named, the URL's destination too (resolved once its form is
   * good); then the endpoint is saved unless the scope has its MAX_WEBHOOKS_PER_ENVIRONMENT.
   */
  async create(scope: WebhookScope, body: Record<string, unknown>): Promise<CreateOutcome> {
    const parsed = parseWebhookCreate(body, scope.environment);
    const fieldErrors = await this.withDestination(body, parsed.ok ? {} : parsed.fieldErrors);
    if (!parsed.ok || Object.keys(fieldErrors).length > 0) return { kind: 'invalid', fieldErrors };
    const secret = generateSigningSecret();
    const row = await this.webhooks.insertWithinLimit(
      scope,
      {
        id: newId('whk'),
        url: parsed.value.url,
        description: parsed.value.description,
        eventTypes: parsed.value.eventTypes,
        sealedSecret: this.secrets.seal(secret),
      },
      MAX_WEBHOOKS_PER_ENVIRONMENT,
    );
    if (!row) return { kind: 'limit_reached' };
    return { kind: 'created', webhook: toWebhook(row), secret };
  }

  /** Oldest first. */
  async list(scope: WebhookScope): Promise<Webhook[]> {
    return (await this.webhooks.list(scope)).map(toWebhook);
  }

  async get(scope: WebhookScope, id: string): Promise<Webhook | undefined> {
    if (!PLAUSIBLE_ID.test(id)) return undefined;
    const row = await this.webhooks.findById(scope, id);
    return row && toWebhook(row);
  }

  /**
   * PATCH. Precedence as for links: 404 for a missing endpoint, then 422 for a bad body. `{}`
   * changes nothing and answers the endpoint as it stands.
   */
  async update(
    scope: WebhookScope,
    id: string,
    body: Record<string, unknown>,
  ): Promise<UpdateOutcome> {
    if (!PLAUSIBLE_ID.test(id)) return { kind: 'not_found' };
    const parsed = parseWebhookPatch(body, scope.environment);
    const fieldErrors = await this.withDestination(body, parsed.ok ? {} : parsed.fieldErrors);
    if (!parsed.ok || Object.keys(fieldErrors).length > 0) {
      return (await this.webhooks.findById(scope, id))
        ? { kind: 'invalid', fieldErrors }
        : { kind: 'not_found' };
    }
    const row =
      Object.keys(parsed.value).length > 0
        ? await this.webhooks.update(scope, id, parsed.value)
        : await this.webhooks.findById(scope, id);
    return row ? { kind: 'updated', webhook: toWebhook(row) } : { kind: 'not_found' };
  }

  async delete(scope: WebhookScope, id: string): Promise<boolean> {
    return PLAUSIBLE_ID.test(id) && this.webhooks.delete(scope, id);
  }

  /** A new secret; the current one keeps signing beside it for PREVIOUS_SECRET_HOURS. */
  async rotateSecret(scope: WebhookScope, id: string): Promise<WebhookWithSecret | undefined> {
    if (!PLAUSIBLE_ID.test(id)) return undefined;
    const secret = generateSigningSecret();
    const row = await this.webhooks.rotateSecret(
      scope,
      id,
      this.secrets.seal(secret),
      PREVIOUS_SECRET_HOURS,
    );
    return row && { webhook: toWebhook(row), secret };
  }

  /** Undefined when the scope has no such endpoint. */
  async deliveries(
    scope: WebhookScope,
    id: string,
    query: DeliveriesQuery,
  ): Promise<DeliveryPage | undefined> {
    if (!PLAUSIBLE_ID.test(id) || !(await this.webhooks.findById(scope, id))) return undefined;
    // One more than the page: whether there is a next one, without counting.
    const rows = await this.webhooks.deliveries(id, { ...query, limit: query.limit + 1 });
    const page = rows.slice(0, query.limit);
    return {
      deliveries: page.map(toDelivery),
      nextCursor: rows.length > query.limit ? (page.at(-1)?.id ?? null) : null,
    };
  }

  /** One more attempt now, for a delivery of an enabled endpoint. */
  async retryDelivery(scope: WebhookScope, id: string, deliveryId: string): Promise<RetryOutcome> {
    if (!PLAUSIBLE_ID.test(id)) return { kind: 'no_webhook' };
    if (!PLAUSIBLE_ID.test(deliveryId)) {
      return (await this.webhooks.findById(scope, id))
        ? { kind: 'no_delivery' }
        : { kind: 'no_webhook' };
    }
    const outcome = await this.webhooks.retryDelivery(scope, id, deliveryId);
    if (!outcome.ok) return { kind: outcome.reason };
    const row = await this.webhooks.deliveryById(id, deliveryId);
    // Deleted with its endpoint in between: gone, as it would be a moment later.
    if (!row) return { kind: 'no_delivery' };
    return { kind: 'retried', delivery: toDelivery(row) };
  }

  /**
   * The field errors with the URL's destination checked, once its form is good (whatever the
   * other fields): every bad field is named in one answer.
   */
  private async withDestination(
    body: Record<string, unknown>,
    fieldErrors: FieldErrors,
  ): Promise<FieldErrors> {
    if (typeof body.url !== 'string' || Object.hasOwn(fieldErrors, 'url')) return fieldErrors;
    const problem = await this.urlProblem(body.url);
    return problem === undefined ? fieldErrors : { ...fieldErrors, url: problem };
  }

  /**
   * Why the URL's host may not receive webhooks: it does not resolve, or one of its addresses
   * is refused (a name with a public and a private address is refused: see checkDestination).
   */
  private async urlProblem(url: string): Promise<string | undefined> {
    const check = await checkDestination(new URL(url), this.addresses, this.resolve);
    if (check.ok) return undefined;
    if (check.reason === 'unresolvable') return 'has a host that does not resolve';
    return `resolves to ${ADDRESS_CLASS_WORDS[check.class]} (${check.address})`;
  }
}
