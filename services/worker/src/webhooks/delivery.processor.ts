import type { Logger } from '@linkservice/logger';
import { secondsSince } from '@linkservice/metrics';
import { startRemoteSpan, untraced } from '@linkservice/telemetry';
import type { AddressPolicy, ResolveHost, SecretBox } from '@linkservice/webhooks';
import { eventPayload, isWebhookEventType } from '@linkservice/webhooks';
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { AttemptLimiter } from './attempt-limiter';
import type { AttemptResult } from './delivery-attempt';
import { attemptDelivery } from './delivery-attempt';
import { deliveryJobSchema } from './delivery-job.contract';
import { nextDeliveryState } from './delivery-outcome';
import { deliveryHeaders } from './delivery-signing';
import type {
  AttemptRecord,
  DeliveryToAttempt,
  WebhookDeliveryRepository,
} from './webhook-delivery.repository';
import type { WebhookMetrics } from './webhook.metrics';

export interface DeliveryProcessorDeps {
  deliveries: WebhookDeliveryRepository;
  secrets: SecretBox;
  policy: AddressPolicy;
  limiter: AttemptLimiter;
  metrics: WebhookMetrics;
  logger: Logger;
  linkDomain: string;
  /** WEBHOOK_RETRY_SCHEDULE: seconds before each attempt. */
  schedule: readonly number[];
  timeoutMs: number;
  /**
   * A delivery succeeded and a later one of its subject waits behind it: that one is due now
   * (the relay's next pass, at once).
   */
  onDelivered: () => void;
  /** Tests: the host's addresses (defaults to the system resolver). */
  resolve?: ResolveHost;
}

/** The job was cancelled (its worker is going away): nothing of it is recorded. */
class DeliveryCancelled extends Error {
  constructor() {
    super('delivery job cancelled: its attempts are not recorded');
  }
}

/**
 * The BullMQ processor of delivery jobs: takes permits for the job's attempts, loads its
 * deliveries that are still due at the job's attempt (one statement, which also marks them
 * started), makes every attempt side by side, then records them all in one statement. A job
 * whose worker is killed records nothing; its deliveries are sent again (BullMQ's stalled-job
 * recovery or the relay's stale bound) with the same `webhook-id`. Thrown errors are unexpected
 * (Postgres away): BullMQ retries the job, and the attempts guard keeps a retry from recording
 * twice.
 */
export function deliveryProcessor(deps: DeliveryProcessorDeps) {
  return (job: Job, _token?: string, signal?: AbortSignal): Promise<{ recorded: number }> =>
    // The job's own statements stay out of traces (a root trace per job would bury the ones
    // that matter); each attempt has its span in its event's trace (attemptOne).
    untraced(() => processJob(deps, job, signal));
}

async function processJob(
  deps: DeliveryProcessorDeps,
  job: Job,
  signal: AbortSignal | undefined,
): Promise<{ recorded: number }> {
  const parsed = deliveryJobSchema.safeParse(job.data);
  // Another release's job shape, or not ours: retrying cannot help.
  if (!parsed.success) throw new UnrecoverableError('not a webhook delivery job');
  const release = await deps.limiter.acquire(parsed.data.deliveries.length);
  try {
    const loaded = await deps.deliveries.loadForAttempt(parsed.data.deliveries);
    // A job's deliveries share their endpoint: its secrets are opened once per job (and kept
    // no longer than the job).
    const opened = new Map<string, string>();
    const open = (sealed: string): string => {
      let secret = opened.get(sealed);
      if (secret === undefined) {
        secret = deps.secrets.open(sealed);
        opened.set(sealed, secret);
      }
      return secret;
    };
    const attempts = await Promise.all(
      loaded
        .filter((delivery) => !delivery.endpoint.disabled)
        .map((delivery) => attemptOne(deps, delivery, signal, open)),
    );
    if (signal?.aborted) throw new DeliveryCancelled();
    const made = attempts.filter((attempt) => attempt !== undefined);
    const { recorded, disabled, successorWaiting } = await deps.deliveries.record(made);
    for (const { endpointId, reason } of disabled) {
      deps.metrics.endpointDisabled(reason);
      deps.logger.warn({ endpointId, reason }, 'webhook endpoint disabled');
    }
    if (successorWaiting) deps.onDelivered();
    return { recorded: recorded.size };
  } finally {
    release();
  }
}

/**
 * One delivery's attempt, in a span of its event's trace (the change that made it), or
 * undefined when it cannot be made at all (its secret does not open, its type is unknown to
 * this release): nothing is recorded, and the relay's stale bound tries it again later.
 */
async function attemptOne(
  deps: DeliveryProcessorDeps,
  delivery: DeliveryToAttempt,
  signal: AbortSignal | undefined,
  open: (sealed: string) => string,
): Promise<AttemptRecord | undefined> {
  const { event, endpoint } = delivery;
  const logFields = { deliveryId: delivery.deliveryId, endpointId: endpoint.id, eventId: event.id };
  if (!isWebhookEventType(event.type)) {
    deps.logger.error({ ...logFields, type: event.type }, 'webhook event of an unknown type');
    return undefined;
  }
  let secrets: string[];
  try {
    secrets = [endpoint.secret, ...(endpoint.previousSecret ? [endpoint.previousSecret] : [])].map(
      open,
    );
  } catch (error) {
    // The message names the key id at most, never the secret.
    deps.logger.error(
      { ...logFields, reason: (error as Error).message },
      'webhook secret cannot be opened (WEBHOOK_ENCRYPTION_KEY / WEBHOOK_PREVIOUS_ENCRYPTION_KEYS?)',
    );
    return undefined;
  }
  const url = new URL(endpoint.url);
  const span = startRemoteSpan('webhook delivery', event.traceparent ?? undefined, {
    'linkservice.webhook.event_type': event.type,
    'linkservice.webhook.attempt': delivery.attempt,
    // The host only: a URL's path or query may carry the receiver's token.
    'server.address': url.hostname,
  });
  const body = eventPayload({ ...event, type: event.type }, deps.linkDomain);
  const startedAt = new Date();
  const started = process.hrtime.bigint();
  // attemptDelivery never throws: every failure is an outcome.
  const result: AttemptResult = await span.inContext(() =>
    attemptDelivery({
      url,
      body,
      headers: deliveryHeaders({ eventId: event.id, sentAt: startedAt, body, secrets }),
      timeoutMs: deps.timeoutMs,
      policy: deps.policy,
      resolve: deps.resolve,
      signal,
    }),
  );
  const seconds = secondsSince(started);
  span.setAttributes({
    'linkservice.webhook.outcome': result.outcome,
    ...(result.status !== null && { 'http.response.status_code': result.status }),
  });
  span.end();
  if (!signal?.aborted) deps.metrics.attempted(result.outcome, seconds);
  return {
    deliveryId: delivery.deliveryId,
    attempt: delivery.attempt,
    startedAt,
    durationMs: Math.round(seconds * 1000),
    outcome: result.outcome,
    responseStatus: result.status,
    responseExcerpt: result.excerpt,
    next: nextDeliveryState(result.outcome, delivery.attempt, deps.schedule),
  };
}
