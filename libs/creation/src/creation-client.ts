import { setTimeout as sleep } from 'node:timers/promises';
import { withQueryDeadline } from '@linkservice/db';
import { closeRedis, REDIS_CONNECTION_DEFAULTS } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import { throttledErrorLog } from '@linkservice/logger';
import { queueTelemetry } from '@linkservice/telemetry';
import type { QueueEventsListener } from 'bullmq';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import type {
  CreateLinksJobResult,
  CreateLinksPayload,
  CreationClient,
  CreationOutcome,
  UnavailableReason,
} from './create-links.job';
import {
  CREATE_LINKS_JOB,
  CREATE_LINKS_QUEUE,
  createLinksJobResultSchema,
  SETTLE_DEADLINE_MS,
  createLinksPayloadSchema,
  createLinksResultSchema,
} from './create-links.job';
import type { CreationRequestsRepository } from './creation-requests.repository';
import { redisOptionsFromUrl } from './redis-options';

export interface CreationClientOptions {
  redisUrl: string;
  /** BullMQ key prefix: the service's REDIS_PREFIX, so stacks sharing a Redis never meet. */
  prefix: string;
  /** The settle's statements (abandon-or-read), built by the caller's composition root. */
  requests: CreationRequestsRepository;
  logger: Logger;
  /** Attempts per job when the worker throws (it rolls back each time); default 3. */
  attempts?: number;
  /** First retry delay, doubled per attempt; default 100 ms. The deadline bounds retries too. */
  backoffMs?: number;
}

/**
 * How far back the events stream is read when the client starts. QueueEvents' default start,
 * `$`, is resolved only when its first XREAD reaches Redis, so an event written between startup
 * and that moment would be lost (bullmq#2874). Stream ids are Redis-clock milliseconds; the
 * margin covers clock skew. Missing an event would only delay an answer: the settle read-back
 * still finds the committed result.
 */
const EVENTS_REPLAY_MS = 5_000;

/** Reconnects back off up to this delay; with the connect timeout it bounds close() too. */
const RECONNECT_MAX_DELAY_MS = 1_000;

class DeadlineReached extends Error {
  constructor() {
    super('no answer from the worker before the deadline');
  }
}

class JobFailed extends Error {}

/** QueueEvents also emits each event as `<event>:<jobId>`; its typings only name the plain ones. */
interface PerJobEvents extends QueueEventsListener {
  [completed: `completed:${string}`]: (args: { returnvalue: unknown }) => void;
  [failed: `failed:${string}`]: (args: { failedReason: string }) => void;
}

/**
 * The gateway's CreationClient: one long-lived Queue and QueueEvents per process. Waits for the
 * job's answer until the deadline; on anything else (timeout, failed job, Redis trouble) it
 * settles through Postgres, so every answer is either the committed result or "nothing was and
 * nothing will be created". See README.md for the protocol.
 */
export class BullCreationClient implements CreationClient {
  private readonly queueConnection: Redis;
  private readonly queue: Queue;
  private readonly events: QueueEvents;
  private readonly requests: CreationRequestsRepository;
  private readonly logger: Logger;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private closing: Promise<void> | undefined;

  constructor(options: CreationClientOptions) {
    this.logger = options.logger;
    this.attempts = options.attempts ?? 3;
    this.backoffMs = options.backoffMs ?? 100;
    this.requests = options.requests;
    const redis = redisOptionsFromUrl(options.redisUrl);

    // Fail fast while Redis is down (BullMQ "failing fast when Redis is down"): an HTTP request
    // must not sit in ioredis' offline queue; the settle answers it instead.
    this.queueConnection = new Redis({
      ...REDIS_CONNECTION_DEFAULTS,
      ...redis,
      retryStrategy: (attempt: number) =>
        this.closing ? null : Math.min(100 * 2 ** attempt, RECONNECT_MAX_DELAY_MS),
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectionName: `${options.prefix}:creation-client`,
    });
    // The Queue re-emits connection errors as its own 'error' event, which is logged below.
    this.queueConnection.on('error', () => undefined);
    this.queue = new Queue(CREATE_LINKS_QUEUE, {
      connection: this.queueConnection,
      prefix: options.prefix,
      // While tracing is on: a producer span per job, whose context the worker continues.
      telemetry: queueTelemetry(),
    });
    this.queue.on(
      'error',
      throttledErrorLog(this.logger, { message: 'creation queue: redis error' }),
    );
    this.events = new QueueEvents(CREATE_LINKS_QUEUE, {
      // Reconnect quickly while open; stop once closing, or close() would wait for a Redis
      // that is not there (QueueEvents.close awaits its connection).
      connection: {
        ...REDIS_CONNECTION_DEFAULTS,
        ...redis,
        retryStrategy: (attempt: number) =>
          this.closing ? null : Math.min(100 * 2 ** attempt, RECONNECT_MAX_DELAY_MS),
      },
      prefix: options.prefix,
      lastEventId: `${Date.now() - EVENTS_REPLAY_MS}-0`,
    });
    this.events.on(
      'error',
      throttledErrorLog(this.logger, { message: 'creation queue events: redis error' }),
    );
  }

  async submit(
    input: Omit<CreateLinksPayload, 'deadline'>,
    timeoutMs: number,
  ): Promise<CreationOutcome> {
    const deadline = Date.now() + timeoutMs;
    const payload = createLinksPayloadSchema.parse({ ...input, deadline });
    let reason: UnavailableReason;
    try {
      const answer = await this.enqueueAndWait(payload, deadline);
      if (answer.status === 'done') return { kind: 'completed', result: answer.result };
      // The worker saw the deadline pass first (its clock or the database's); settle to be sure.
      reason = 'timeout';
    } catch (error) {
      reason = unavailableReason(error);
      if (reason !== 'timeout') {
        this.logger.warn(
          { err: error, requestId: payload.requestId },
          'creation job gave no answer; settling',
        );
      }
    }
    return this.settle(payload, reason);
  }

  /**
   * Resolves once the Queue and QueueEvents are connected: until then the queue's connection
   * (no offline queue) fails every add, and a creation would answer 503. For the process's start.
   */
  async waitUntilReady(): Promise<void> {
    await Promise.all([this.queue.waitUntilReady(), this.events.waitUntilReady()]);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.queueConnection.status !== 'ready') {
        // Redis is away. The retry strategy now gives up at the next attempt; wait for that
        // while the Queue still listens: once closed it drops its listeners, and the late
        // failure of its pending connect would surface as an unhandled 'error'.
        await this.queue.waitUntilReady().catch(() => undefined);
      }
      await Promise.allSettled([this.events.close(), this.queue.close()]);
      // BullMQ leaves a connection it was given open; this one is ours.
      await closeRedis(this.queueConnection);
    })();
    return this.closing;
  }

  private async enqueueAndWait(
    payload: CreateLinksPayload,
    deadline: number,
  ): Promise<CreateLinksJobResult> {
    const stop = new AbortController();
    const timeUp = sleep(Math.max(0, deadline - Date.now()), undefined, {
      signal: stop.signal,
    }).then(() => {
      throw new DeadlineReached();
    });
    // Rejections of the losing side of a race must not surface as unhandled.
    timeUp.catch(() => undefined);
    try {
      const waiting = this.waitForFinish(payload.requestId, stop.signal);
      waiting.catch(() => undefined);
      await Promise.race([
        this.queue.add(CREATE_LINKS_JOB, payload, {
          jobId: payload.requestId,
          attempts: this.attempts,
          backoff: { type: 'exponential', delay: this.backoffMs },
        }),
        timeUp,
      ]);
      const value = await Promise.race([waiting, timeUp]);
      return createLinksJobResultSchema.parse(value);
    } finally {
      stop.abort();
    }
  }

  /**
   * Resolves with the job's return value, rejects when it failed for good. Listens before the job
   * is added, and the id is new, so its end cannot come before the listener; the events reader
   * resumes from its last stream id after a reconnect, so it cannot skip it either. (Looking the
   * job up as well, as Job.waitUntilFinished does for ids that may be old, cost two more Redis
   * commands per creation.) Should the event still be missed (the stream trimmed past it), the
   * deadline ends the wait and the settle finds the committed result.
   */
  private waitForFinish(jobId: string, signal: AbortSignal): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const completedEvent = `completed:${jobId}` as const;
      const failedEvent = `failed:${jobId}` as const;
      const cleanup = (): void => {
        this.events.off<PerJobEvents>(completedEvent, onCompleted);
        this.events.off<PerJobEvents>(failedEvent, onFailed);
        signal.removeEventListener('abort', onAbort);
      };
      const onCompleted = (args: { returnvalue: unknown }): void => {
        cleanup();
        resolve(args.returnvalue);
      };
      const onFailed = (args: { failedReason: string }): void => {
        cleanup();
        reject(new JobFailed(args.failedReason));
      };
      const onAbort = (): void => {
        cleanup();
        reject(new DeadlineReached());
      };
      this.events.on<PerJobEvents>(completedEvent, onCompleted);
      this.events.on<PerJobEvents>(failedEvent, onFailed);
      signal.addEventListener('abort', onAbort);
    });
  }

  /**
   * Decides the outcome through Postgres: inserting 'abandoned' either succeeds (the worker can
   * no longer create anything for this request) or finds the worker's committed 'done' row.
   * Bounded by SETTLE_DEADLINE_MS in its own scope, whatever the caller's deadline.
   */
  private async settle(
    payload: CreateLinksPayload,
    reason: UnavailableReason,
  ): Promise<CreationOutcome> {
    let settled;
    try {
      settled = await withQueryDeadline(SETTLE_DEADLINE_MS, () =>
        this.requests.abandonOrRead(payload.requestId, payload.appId),
      );
    } catch (error) {
      // The worker's transaction is all-or-nothing and cannot commit after the deadline guard,
      // so whatever it did is either absent or complete under its aliases.
      this.logger.error(
        { err: error, requestId: payload.requestId },
        'could not settle a creation request',
      );
      return { kind: 'unavailable', reason: 'database_unreachable' };
    }
    switch (settled.kind) {
      case 'abandoned':
        this.removeWaitingJob(payload.requestId);
        return { kind: 'unavailable', reason };
      case 'already_abandoned':
        return { kind: 'unavailable', reason };
      case 'done':
        return { kind: 'completed', result: createLinksResultSchema.parse(settled.results) };
    }
  }

  /** Best effort: an abandoned job would only find its 'abandoned' row and stop. */
  private removeWaitingJob(jobId: string): void {
    this.queue.remove(jobId).catch((error: unknown) => {
      this.logger.debug({ err: error, jobId }, 'could not remove an abandoned creation job');
    });
  }
}

function unavailableReason(error: unknown): UnavailableReason {
  if (error instanceof DeadlineReached) return 'timeout';
  if (error instanceof JobFailed) return 'worker_failed';
  return 'queue_unreachable';
}

export function createCreationClient(options: CreationClientOptions): BullCreationClient {
  return new BullCreationClient(options);
}
