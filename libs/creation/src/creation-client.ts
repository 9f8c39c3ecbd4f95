import { AsyncLocalStorage } from 'node:async_hooks';
import { withQueryDeadline } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';
import { activeTraceparent } from '@linkservice/telemetry';
import type { Queue, QueueEvents } from 'bullmq';
import type {
  CreateLinksJobResult,
  CreateLinksPayload,
  CreationClient,
  CreationJobKind,
  CreationOutcome,
  UnavailableReason,
} from './creation-job.contract';
import {
  createLinksResultSchema,
  groupJob,
  MAX_GROUP_ENTRIES,
  SETTLE_DEADLINE_MS,
} from './creation-job.contract';
import type { RedisTarget } from '@linkservice/config';
import type { CreationRequestsRepository } from './creation-requests.repository';
import type { GatherTimers } from './group-gatherer';
import { GroupGatherer, NODE_TIMERS } from './group-gatherer';
import type { OutgoingJob } from './pre-group-commit.compat';
import { resendAlone } from './pre-group-commit.compat';
import { CreationQueueConnection } from './creation-queue.connection';

export interface CreationClientOptions {
  /** REDIS_URL or REDIS_CLUSTER_NODES. */
  redis: RedisTarget;
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
export const DEFAULT_GROUP_WAIT_MS = 10;

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
  /** Set once its job is added: the job's id, and whether the request was alone in it. */
  sentAs?: { jobId: string; alone: boolean };
}

/** A job on its way: its kind, and its requests still waiting, by id. */
interface SentJob {
  kind: CreationJobKind;
  waiters: Map<string, Waiter>;
}

/** Runs a function in the async context of the request that opened a group. */
type InContext = <R>(fn: () => R) => R;

/**
 * The gateway's CreationClient, the transport of group commit: one long-lived Queue and
 * QueueEvents per process. The GroupGatherer decides when the requests gathered leave as one
 * job (see README.md, "Group commit"); this class adds the job, hands each request its own
 * answer from the job's, and settles through Postgres every request that gets none by its own
 * deadline (timeout, failed job, Redis trouble), so every answer is either the committed result
 * or "nothing was and nothing will be created".
 */
export class BullCreationClient implements CreationClient {
  private readonly connection: CreationQueueConnection;
  private readonly queue: Queue;
  private readonly events: QueueEvents;
  private readonly requests: CreationRequestsRepository;
  private readonly logger: Logger;
  private readonly attempts: number;
  private readonly backoffMs: number;
  private readonly gatherer: GroupGatherer<Waiter, InContext>;
  /** Jobs added and not answered yet, by job id. */
  private readonly sent = new Map<string, SentJob>();

  constructor(options: CreationClientOptions, timers: GatherTimers = NODE_TIMERS) {
    this.logger = options.logger;
    this.attempts = options.attempts ?? 3;
    this.backoffMs = options.backoffMs ?? 100;
    this.requests = options.requests;
    this.gatherer = new GroupGatherer(
      {
        groupsInFlight: options.groupsInFlight ?? DEFAULT_GROUPS_IN_FLIGHT,
        groupWaitMs: options.groupWaitMs ?? DEFAULT_GROUP_WAIT_MS,
        maxGroupEntries: MAX_GROUP_ENTRIES,
      },
      timers,
      {
        inFlight: () => this.sent.size,
        // The group's job is added in its first request's async context: while tracing is on,
        // its producer span is a child of that request (for a lone request, its whole trace).
        opened: () => AsyncLocalStorage.snapshot(),
        leave: (waiters, inFirstContext) => {
          this.sendGroup(waiters, inFirstContext);
        },
      },
    );
    this.connection = new CreationQueueConnection(options);
    this.queue = this.connection.queue;
    this.events = this.connection.events;
    // Two listeners for the process' whole life, whatever the traffic: each event finds its
    // job by id (a listener per job was two to add and remove per creation).
    this.events.on('completed', ({ jobId, returnvalue }) => {
      this.jobAnswered(jobId, returnvalue);
    });
    this.events.on('failed', ({ jobId, failedReason }) => {
      const job = this.sent.get(jobId);
      if (!job) return;
      const requests = [...job.waiters.values()].map((waiter) => waiter.payload);
      const resend = resendAlone({ kind: job.kind, requests }, failedReason);
      if (!resend) {
        this.jobFailed(jobId, new JobFailed(failedReason));
        return;
      }
      this.jobEnded(jobId);
      for (const outgoing of resend) {
        const waiters = outgoing.requests.flatMap(
          ({ requestId }) => job.waiters.get(requestId) ?? [],
        );
        this.addJob(outgoing, waiters);
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
  waitUntilReady(): Promise<void> {
    return this.connection.waitUntilReady();
  }

  close(): Promise<void> {
    return this.connection.close();
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
      this.gatherer.add(waiter, waiter.payload.entries.length);
      return await Promise.race([answered, timeUp]);
    } finally {
      clearTimeout(timer);
      this.forget(waiter);
    }
  }

  /**
   * Adds the gathered requests as one job. Its id is its first request's id: unique (a request
   * is in one group only), and for a group of one the same id as before group commit.
   */
  private sendGroup(waiters: Waiter[], inFirstContext: InContext): void {
    const requests = waiters.map((waiter) => waiter.payload);
    inFirstContext(() => {
      this.addJob({ kind: groupJob, jobId: requests[0].requestId, requests }, waiters);
    });
  }

  /** Registers the job before adding it (the id is new, so it cannot finish unseen). */
  private addJob({ kind, jobId, requests }: OutgoingJob, waiters: Waiter[]): void {
    this.sent.set(jobId, {
      kind,
      waiters: new Map(waiters.map((waiter) => [waiter.payload.requestId, waiter])),
    });
    for (const waiter of waiters) waiter.sentAs = { jobId, alone: waiters.length === 1 };
    this.queue
      .add(kind.name, kind.dataOf(requests), {
        jobId,
        attempts: this.attempts,
        backoff: { type: 'exponential', delay: this.backoffMs },
      })
      .catch((error: unknown) => {
        this.jobFailed(jobId, error instanceof Error ? error : new Error(String(error)));
      });
  }

  /** A job left the in-flight set: the requests gathered meanwhile may go. */
  private jobEnded(jobId: string): void {
    this.sent.delete(jobId);
    this.gatherer.groupEnded();
  }

  /** Hands each waiting request its own answer from the job's return value. */
  private jobAnswered(jobId: string, returnvalue: unknown): void {
    const job = this.sent.get(jobId);
    if (!job) return;
    this.jobEnded(jobId);
    const answers = job.kind.answersOf(returnvalue, [...job.waiters.keys()]);
    if (!answers) {
      this.failWaiters(job, new JobFailed('the creation job answered in an unknown shape'));
      return;
    }
    for (const { requestId, answer } of answers) {
      job.waiters.get(requestId)?.answer(answer);
      job.waiters.delete(requestId);
    }
    // Every request of a job has an answer; one without would be the worker's bug. Its settle
    // still decides it from Postgres.
    if (job.waiters.size > 0) {
      this.failWaiters(job, new JobFailed('the creation job answered without this request'));
    }
  }

  private jobFailed(jobId: string, error: Error): void {
    const job = this.sent.get(jobId);
    if (!job) return;
    this.jobEnded(jobId);
    this.failWaiters(job, error);
  }

  private failWaiters(job: SentJob, error: Error): void {
    for (const waiter of job.waiters.values()) waiter.fail(error);
    job.waiters.clear();
  }

  /** A request that stopped waiting (answered, failed or out of time) leaves its job. */
  private forget(waiter: Waiter): void {
    if (!waiter.sentAs) {
      // Out of time before its group left (the event loop stalled): it is not sent at all.
      this.gatherer.withdraw(waiter, waiter.payload.entries.length);
      return;
    }
    const { jobId } = waiter.sentAs;
    const job = this.sent.get(jobId);
    if (job?.waiters.delete(waiter.payload.requestId) && job.waiters.size === 0) {
      this.jobEnded(jobId);
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
