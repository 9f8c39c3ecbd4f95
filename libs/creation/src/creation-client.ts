import { AsyncLocalStorage } from 'node:async_hooks';
import { withQueryDeadline } from '@linkservice/db';
import { closeRedis, REDIS_CONNECTION_DEFAULTS } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import { throttledErrorLog } from '@linkservice/logger';
import { activeTraceparent, queueTelemetry } from '@linkservice/telemetry';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import type {
  CreateLinksGroup,
  CreateLinksJobResult,
  CreateLinksPayload,
  CreationClient,
  CreationOutcome,
  UnavailableReason,
} from './create-links.job';
import {
  CREATE_LINKS_GROUP_JOB,
  CREATE_LINKS_JOB,
  CREATE_LINKS_QUEUE,
  createLinksGroupResultSchema,
  createLinksJobResultSchema,
  createLinksResultSchema,
  MAX_GROUP_ENTRIES,
  SETTLE_DEADLINE_MS,
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
  /**
   * Groups that may await their answer at once before new requests gather into the next group
   * (group commit); default DEFAULT_GROUPS_IN_FLIGHT.
   */
  groupsInFlight?: number;
  /**
   * The longest a request waits for others to join its group when groupsInFlight groups are
   * already on their way; default DEFAULT_GROUP_WAIT_MS. A request that finds a free slot waits
   * only for the rest of the event-loop turn.
   */
  groupWaitMs?: number;
}

export const DEFAULT_GROUPS_IN_FLIGHT = 1;
export const DEFAULT_GROUP_WAIT_MS = 2;

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

/** A request waiting in the gateway: gathered into the next group, then answered from its job. */
interface Waiter {
  payload: CreateLinksPayload;
  answer: (result: CreateLinksJobResult) => void;
  fail: (error: Error) => void;
  /** Set once its group is added: the group's job id, and whether the request was alone in it. */
  sentAs?: { jobId: string; alone: boolean };
}

/** A group job on its way: its requests still waiting, by id. */
interface SentGroup {
  waiters: Map<string, Waiter>;
  /** A create-links job of one request, for a worker from before group commit (see resendAlone). */
  legacyJob?: true;
}

/**
 * How a worker from before group commit fails a group job: its processor parsed every job as one
 * request and refused what did not fit, before any statement. A worker of this release words
 * its own refusal differently (`invalid creation job payload`).
 */
const REFUSED_BY_PREVIOUS_WORKER = 'invalid create-links payload:';

/**
 * The gateway's CreationClient: one long-lived Queue and QueueEvents per process. Requests that
 * arrive close together travel as one group job (group commit, see README.md and gather()). Each
 * request waits for its own answer in its group's until its own deadline; on anything else
 * (timeout, failed job, Redis trouble) it settles through Postgres, so every answer is either the
 * committed result or "nothing was and nothing will be created".
 */
export class BullCreationClient implements CreationClient {
  private readonly queueConnection: Redis;
  private readonly queue: Queue;
  private readonly events: QueueEvents;
  private readonly requests: CreationRequestsRepository;
  private readonly logger: Logger;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly groupsInFlight: number;
  private readonly groupWaitMs: number;
  /** Requests gathered for the next group, in arrival order, and their entry count. */
  private gathering: Waiter[] = [];
  private gatheredEntries = 0;
  /** Runs a function in the async context of the gathered group's first request. */
  private firstContext: (<R>(fn: () => R) => R) | undefined;
  private sendImmediate: NodeJS.Immediate | undefined;
  private sendTimer: NodeJS.Timeout | undefined;
  /** Group jobs added and not answered yet, by job id. */
  private readonly sent = new Map<string, SentGroup>();
  private closing: Promise<void> | undefined;

  constructor(options: CreationClientOptions) {
    this.logger = options.logger;
    this.attempts = options.attempts ?? 3;
    this.backoffMs = options.backoffMs ?? 100;
    this.groupsInFlight = options.groupsInFlight ?? DEFAULT_GROUPS_IN_FLIGHT;
    this.groupWaitMs = options.groupWaitMs ?? DEFAULT_GROUP_WAIT_MS;
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
    // Two listeners for the process' whole life, whatever the traffic: each event finds its
    // group by job id (a listener per job was two to add and remove per creation).
    this.events.on('completed', ({ jobId, returnvalue }) => {
      this.groupAnswered(jobId, returnvalue);
    });
    this.events.on('failed', ({ jobId, failedReason }) => {
      const group = this.sent.get(jobId);
      if (!group) return;
      // Once only: a one-request job that worker refused too is a failure like any other.
      if (!group.legacyJob && failedReason.startsWith(REFUSED_BY_PREVIOUS_WORKER)) {
        this.resendAlone(jobId);
      } else {
        this.groupFailed(jobId, new JobFailed(failedReason));
      }
    });
  }

  async submit(
    input: Omit<CreateLinksPayload, 'deadline' | 'traceparent'>,
    timeoutMs: number,
  ): Promise<CreationOutcome> {
    const deadline = Date.now() + timeoutMs;
    const traceparent = activeTraceparent();
    const payload: CreateLinksPayload = {
      ...input,
      deadline,
      ...(traceparent === undefined ? {} : { traceparent }),
    };
    let reason: UnavailableReason;
    let waiter: Waiter | undefined;
    const answered = new Promise<CreateLinksJobResult>((answer, fail) => {
      waiter = { payload, answer, fail };
    });
    answered.catch(() => undefined);
    try {
      const answer = await this.answerWithin(waiter as Waiter, answered, deadline);
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
    return this.settle(payload, reason, waiter?.sentAs);
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

  /**
   * The request's answer from its group's job, or DeadlineReached at its own deadline (then it
   * leaves the group's waiters: the settle decides it).
   */
  private async answerWithin(
    waiter: Waiter,
    answered: Promise<CreateLinksJobResult>,
    deadline: number,
  ): Promise<CreateLinksJobResult> {
    // A plain timer: an aborted timers/promises sleep builds an AbortError (a stack trace) for
    // every request answered in time.
    let timer: NodeJS.Timeout | undefined;
    const timeUp = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () => {
          reject(new DeadlineReached());
        },
        Math.max(0, deadline - Date.now()),
      );
    });
    // Rejections of the losing side of a race must not surface as unhandled.
    timeUp.catch(() => undefined);
    try {
      this.gather(waiter);
      return await Promise.race([answered, timeUp]);
    } finally {
      clearTimeout(timer);
      this.forget(waiter);
    }
  }

  /**
   * Adds a request to the group being gathered. While fewer than groupsInFlight groups await
   * their answer, the group leaves at the end of this event-loop turn: a lone request waits for
   * nothing, and every request whose bytes arrived with it joins it. Otherwise it leaves when a
   * group is answered, or groupWaitMs after its first request came, whichever is first: under
   * load, requests gather while the worker runs the groups before them. It leaves at once when
   * one more request would take it past MAX_GROUP_ENTRIES.
   */
  private gather(waiter: Waiter): void {
    const entries = waiter.payload.entries.length;
    if (this.gatheredEntries + entries > MAX_GROUP_ENTRIES) this.sendGroup();
    if (this.gathering.length === 0) {
      // The group's job is added in its first request's async context: while tracing is on, its
      // producer span is a child of that request (for a lone request, its whole trace).
      this.firstContext = AsyncLocalStorage.snapshot();
    }
    this.gathering.push(waiter);
    this.gatheredEntries += entries;
    if (this.gatheredEntries >= MAX_GROUP_ENTRIES) this.sendGroup();
    else if (this.sent.size < this.groupsInFlight) this.sendSoon();
    else {
      this.sendTimer ??= setTimeout(() => {
        this.sendGroup();
      }, this.groupWaitMs);
    }
  }

  /** Sends the gathered group at the end of this event-loop turn. */
  private sendSoon(): void {
    if (this.sendImmediate) return;
    this.sendImmediate = setImmediate(() => {
      this.sendGroup();
    });
  }

  /** A group left the in-flight set: the requests gathered meanwhile may go. */
  private groupEnded(jobId: string): void {
    this.sent.delete(jobId);
    if (this.gathering.length > 0) this.sendSoon();
  }

  /**
   * Adds the gathered requests as one job. Its id is its first request's id: unique (a request
   * is in one group only), and for a group of one the same id as before group commit.
   */
  private sendGroup(): void {
    clearTimeout(this.sendTimer);
    clearImmediate(this.sendImmediate);
    this.sendTimer = undefined;
    this.sendImmediate = undefined;
    const waiters = this.gathering;
    const inFirstContext = this.firstContext;
    this.gathering = [];
    this.gatheredEntries = 0;
    this.firstContext = undefined;
    const first = waiters.at(0);
    if (!first || !inFirstContext) return;
    const jobId = first.payload.requestId;
    const group: SentGroup = {
      waiters: new Map(waiters.map((waiter) => [waiter.payload.requestId, waiter])),
    };
    this.sent.set(jobId, group);
    for (const waiter of waiters) waiter.sentAs = { jobId, alone: waiters.length === 1 };
    const payload: CreateLinksGroup = { requests: waiters.map((waiter) => waiter.payload) };
    inFirstContext(() =>
      this.queue.add(CREATE_LINKS_GROUP_JOB, payload, {
        jobId,
        attempts: this.attempts,
        backoff: { type: 'exponential', delay: this.backoffMs },
      }),
    ).catch((error: unknown) => {
      this.groupFailed(jobId, error instanceof Error ? error : new Error(String(error)));
    });
  }

  /**
   * A worker from before group commit refused the group (a rolling upgrade that reached the
   * gateways first): it created nothing, so each request still waiting goes again as the job of
   * one request that worker takes, answered as before group commit. Its id is the request's with
   * `-alone`: the group's job keeps the first request's id.
   */
  private resendAlone(groupJobId: string): void {
    const group = this.sent.get(groupJobId);
    if (!group) return;
    this.groupEnded(groupJobId);
    for (const waiter of group.waiters.values()) {
      const jobId = `${waiter.payload.requestId}-alone`;
      this.sent.set(jobId, {
        waiters: new Map([[waiter.payload.requestId, waiter]]),
        legacyJob: true,
      });
      waiter.sentAs = { jobId, alone: true };
      this.queue
        .add(CREATE_LINKS_JOB, waiter.payload, {
          jobId,
          attempts: this.attempts,
          backoff: { type: 'exponential', delay: this.backoffMs },
        })
        .catch((error: unknown) => {
          this.groupFailed(jobId, error instanceof Error ? error : new Error(String(error)));
        });
    }
  }

  /** Hands each waiting request its own answer from the group's return value. */
  private groupAnswered(jobId: string, returnvalue: unknown): void {
    const group = this.sent.get(jobId);
    if (!group) return;
    this.groupEnded(jobId);
    if (group.legacyJob) {
      const answer = createLinksJobResultSchema.safeParse(returnvalue);
      for (const waiter of group.waiters.values()) {
        if (answer.success) waiter.answer(answer.data);
        else waiter.fail(new JobFailed('the job answered in an unknown shape'));
      }
      return;
    }
    const parsed = createLinksGroupResultSchema.safeParse(returnvalue);
    if (!parsed.success) {
      this.failWaiters(group, new JobFailed('the group job answered in an unknown shape'));
      return;
    }
    for (const { requestId, answer } of parsed.data.answers) {
      group.waiters.get(requestId)?.answer(answer);
      group.waiters.delete(requestId);
    }
    // Every request of a group has an answer; one without would be the worker's bug. Its settle
    // still decides it from Postgres.
    if (group.waiters.size > 0) {
      this.failWaiters(group, new JobFailed('the group job answered without this request'));
    }
  }

  private groupFailed(jobId: string, error: Error): void {
    const group = this.sent.get(jobId);
    if (!group) return;
    this.groupEnded(jobId);
    this.failWaiters(group, error);
  }

  private failWaiters(group: SentGroup, error: Error): void {
    for (const waiter of group.waiters.values()) waiter.fail(error);
    group.waiters.clear();
  }

  /** A request that stopped waiting (answered, failed or out of time) leaves its group. */
  private forget(waiter: Waiter): void {
    if (!waiter.sentAs) {
      // Out of time before its group left (the event loop stalled): it is not sent at all.
      const index = this.gathering.indexOf(waiter);
      if (index !== -1) {
        this.gathering.splice(index, 1);
        this.gatheredEntries -= waiter.payload.entries.length;
      }
      return;
    }
    const { jobId } = waiter.sentAs;
    const group = this.sent.get(jobId);
    if (group?.waiters.delete(waiter.payload.requestId) && group.waiters.size === 0) {
      this.groupEnded(jobId);
    }
  }

  /**
   * Decides the outcome through Postgres: inserting 'abandoned' either succeeds (the worker can
   * no longer create anything for this request) or finds the worker's committed 'done' row.
   * Bounded by SETTLE_DEADLINE_MS in its own scope, whatever the caller's deadline.
   */
  private async settle(
    payload: CreateLinksPayload,
    reason: UnavailableReason,
    sentAs: Waiter['sentAs'],
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
        // A job of other requests too must stay: they may still be waiting for it.
        if (sentAs?.alone) this.removeWaitingJob(sentAs.jobId);
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
