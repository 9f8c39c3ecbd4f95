import { z } from 'zod';
import { inLinkOrder, linkDraftSchema } from '@linkservice/contracts';
import type { FieldErrors, Link } from '@linkservice/contracts';

/**
 * The creation queue's contract. One creation request creates links for one app and environment,
 * in order (a single POST /links is a request with one entry); a job carries a group of them
 * (group commit). The worker parses with these schemas; the payload never carries a key or any
 * other secret. The protocol around it (deadline, settle, exactly-once, groups) is described in
 * ../README.md.
 */
export const CREATE_LINKS_QUEUE = 'link-creations';

/**
 * The BullMQ prefix of the creation queue. On Redis Cluster `<REDIS_PREFIX>:{link-creations}`,
 * so every key of the queue (`<REDIS_PREFIX>:{link-creations}:link-creations:…`) has one hash
 * tag and BullMQ's scripts, which touch several of them, run there; a queue's tag is its name,
 * so queues spread over the masters. On a single Redis REDIS_PREFIX itself, the names 0.1 used:
 * renaming a live queue's keys would strand the jobs of a rolling upgrade (a gateway of one
 * release waiting on a queue the other's workers no longer read), and a single Redis has no
 * slots to keep together. Every process of a deployment is in the same mode, so they agree.
 */
export function creationQueuePrefix(redisPrefix: string, cluster: boolean): string {
  return cluster ? `${redisPrefix}:{${CREATE_LINKS_QUEUE}}` : redisPrefix;
}
/**
 * A job holding the creation requests that reached one gateway close together (group commit):
 * one job and one worker transaction for all of them, each request still answered, counted and
 * made exactly-once on its own (see ../README.md, "Group commit").
 */
export const CREATE_LINKS_GROUP_JOB = 'create-links-group';

/**
 * A group of several requests holds at most this many entries (a lone batch of MAX_BATCH_ENTRIES
 * fills one), so the worker's transaction, and the app locks it holds, last no longer than one
 * full batch's. A request with more entries travels alone.
 */
export const MAX_GROUP_ENTRIES = 100;

/**
 * How long after the deadline the worker may still COMMIT a job it claimed before the deadline.
 * The worker's last statement refuses to store results past `deadline + COMMIT_GRACE_MS` (by the
 * database clock), so no creation can become visible after that moment.
 */
export const COMMIT_GRACE_MS = 1_000;

/**
 * How long the gateway's settle insert may wait for a worker transaction holding the same
 * creation_requests row. Longer than COMMIT_GRACE_MS by a margin for clock skew between the
 * gateway and the database and for the commit itself, so the wait ends with the worker's outcome.
 */
export const SETTLE_LOCK_TIMEOUT_MS = COMMIT_GRACE_MS + 2_000;

/**
 * The client-side bound of the whole settle (getting a connection, BEGIN, the insert that may
 * wait SETTLE_LOCK_TIMEOUT_MS for the lock, the read-back, COMMIT): its own query-deadline scope,
 * replacing the request's budget and the pool's default, which would cut the lock wait short.
 * Past it (a frozen database) the creation answers 503 `database_unreachable`. With a frozen
 * Postgres a creation therefore answers within CREATION_TIMEOUT_MS + SETTLE_DEADLINE_MS.
 */
export const SETTLE_DEADLINE_MS = SETTLE_LOCK_TIMEOUT_MS + 2_000;

export const createLinksPayloadSchema = z.object({
  /**
   * Also the BullMQ job id and the creation_requests primary key: unique per request, never
   * derived from input. BullMQ refuses custom ids that contain `:` or are integers.
   */
  requestId: z
    .string()
    .min(1)
    .max(200)
    .regex(/^(?!\d+$)[^:]+$/, 'must not contain ":" nor be an integer'),
  appId: z.string().min(1),
  environment: z.enum(['live', 'test']),
  /**
   * The HTTP request's X-Request-Id, so the worker's span and log line name the request an
   * operator was given. Not an identity: the gateway takes it from the caller's header.
   */
  httpRequestId: z.string().min(1).max(200).optional(),
  /** Entries that passed the gateway's validation, with their position in the request. */
  entries: z.array(z.object({ index: z.number().int().min(0), draft: linkDraftSchema })).min(1),
  /**
   * How many links the gateway reserved against the hourly creation limit. When an entry would
   * be created past it, that entry is refused as rate_limited and the job stops.
   */
  creationBudget: z.number().int().min(0),
  /** Epoch ms after which the gateway has stopped waiting: the worker must not create anything. */
  deadline: z.number().int(),
  /**
   * The HTTP request's trace context (W3C `traceparent`, nothing else) while tracing is on: the
   * worker's span for this request continues the request's trace even when the job carries
   * other requests too.
   */
  traceparent: z.string().max(64).optional(),
});
export type CreateLinksPayload = z.infer<typeof createLinksPayloadSchema>;

/** The payload of a create-links-group job: requests in arrival order, each its own. */
export const createLinksGroupSchema = z.object({
  requests: z
    .array(createLinksPayloadSchema)
    .min(1)
    .refine(
      (requests) => new Set(requests.map(({ requestId }) => requestId)).size === requests.length,
      'request ids must be unique within a group',
    )
    .refine(
      (requests) =>
        requests.length === 1 ||
        requests.reduce((sum, { entries }) => sum + entries.length, 0) <= MAX_GROUP_ENTRIES,
      `a group of several requests holds at most ${MAX_GROUP_ENTRIES} entries`,
    ),
});
export type CreateLinksGroup = z.infer<typeof createLinksGroupSchema>;

/**
 * A created link as the worker wrote it. Results read back from creation_requests (a settle that
 * found the worker's outcome, a redelivery) come through jsonb, which reorders keys: they are put
 * back in toLink's order, so a 201 reads alike however it was answered.
 */
const linkSchema = z
  .custom<Link>((value) => typeof value === 'object' && value !== null)
  .transform(inLinkOrder);

export const entryResultSchema = z.discriminatedUnion('ok', [
  z.object({ index: z.number().int().min(0), ok: z.literal(true), link: linkSchema }),
  z.object({
    index: z.number().int().min(0),
    ok: z.literal(false),
    error: z.enum(['validation_failed', 'rate_limited', 'plan_limit_reached']),
    message: z.string(),
    fieldErrors: z.record(z.string(), z.string()).optional(),
  }),
]);
export type EntryResult = z.infer<typeof entryResultSchema>;

/**
 * Texts of a validation_failed entry that both the gateway and the worker produce: a caller sees
 * the same words whichever of the two refused the entry.
 */
export const ENTRY_INVALID_MESSAGE = 'The entry is invalid; fieldErrors names each failing field.';
export const ALIAS_REPEATED = 'repeats the alias of an earlier entry of this batch';

/** A validation_failed entry, the same whether the gateway or the worker refused it. */
export function entryInvalid(index: number, fieldErrors: FieldErrors): EntryResult {
  return {
    index,
    ok: false,
    error: 'validation_failed',
    message: ENTRY_INVALID_MESSAGE,
    fieldErrors,
  };
}

export const stoppedEarlySchema = z.object({
  reason: z.enum(['rate_limited', 'plan_limit_reached']),
  atIndex: z.number().int().min(0),
  message: z.string(),
});
export type StoppedEarly = z.infer<typeof stoppedEarlySchema>;

/**
 * What a job returns, and what creation_requests.results stores. `results` lists the entries the
 * worker tried, by index; when `stoppedEarly` is set, entries after `atIndex` were not tried.
 */
export const createLinksResultSchema = z.object({
  results: z.array(entryResultSchema),
  stoppedEarly: stoppedEarlySchema.optional(),
});
export type CreateLinksResult = z.infer<typeof createLinksResultSchema>;

/**
 * The job's return value. `abandoned`: the worker created nothing and never will for this
 * request, because the deadline passed before it could claim the request or the gateway had
 * already settled it as abandoned. A gateway that still listens then settles it itself.
 */
export const createLinksJobResultSchema = z.discriminatedUnion('status', [
  z.object({ status: z.literal('done'), result: createLinksResultSchema }),
  z.object({
    status: z.literal('abandoned'),
    reason: z.enum(['deadline_passed', 'abandoned_by_gateway']),
  }),
]);
export type CreateLinksJobResult = z.infer<typeof createLinksJobResultSchema>;

/** A create-links-group job's return value: one answer per request of the group, in its order. */
export const createLinksGroupResultSchema = z.object({
  answers: z.array(z.object({ requestId: z.string(), answer: createLinksJobResultSchema })),
});
export type CreateLinksGroupResult = z.infer<typeof createLinksGroupResultSchema>;

/** One request's answer, as a job's return value carries it. */
export interface RequestAnswer {
  requestId: string;
  answer: CreateLinksJobResult;
}

/** The requests a job's payload carries, or the paths of what did not parse (never values). */
export type ParsedRequests =
  { ok: true; requests: CreateLinksPayload[] } | { ok: false; issuePaths: string[] };

/**
 * How one kind of creation job carries its requests and their answers: defined once, written and
 * read by the gateway (dataOf, answersOf) and read and written by the worker (requestsOf,
 * replyOf), so neither side can drift from the other.
 */
export interface CreationJobKind<Reply = unknown> {
  readonly name: string;
  dataOf(requests: readonly CreateLinksPayload[]): unknown;
  requestsOf(data: unknown): ParsedRequests;
  replyOf(answers: readonly RequestAnswer[]): Reply;
  /** The answers of a return value, or undefined when it has another shape. */
  answersOf(returnvalue: unknown, requestIds: readonly string[]): RequestAnswer[] | undefined;
}

/** The issue paths of a failed zod parse, e.g. `requests.0.entries`: never the values. */
export function issuePathsOf(error: z.ZodError): string[] {
  return error.issues.map((issue) => issue.path.join('.'));
}

/** The job of group commit: every request that gathered in one gateway, answered each. */
export const groupJob: CreationJobKind<CreateLinksGroupResult> = {
  name: CREATE_LINKS_GROUP_JOB,
  dataOf: (requests): CreateLinksGroup => ({ requests: [...requests] }),
  requestsOf: (data) => {
    const parsed = createLinksGroupSchema.safeParse(data);
    return parsed.success
      ? { ok: true, requests: parsed.data.requests }
      : { ok: false, issuePaths: issuePathsOf(parsed.error) };
  },
  replyOf: (answers) => ({ answers: [...answers] }),
  answersOf: (returnvalue) => {
    const parsed = createLinksGroupResultSchema.safeParse(returnvalue);
    return parsed.success ? parsed.data.answers : undefined;
  },
};

export type UnavailableReason =
  /** No answer from the worker within the timeout. */
  | 'timeout'
  /** Redis refused or dropped the job or its answer. */
  | 'queue_unreachable'
  /** The worker failed the job on every attempt (it rolled back each time). */
  | 'worker_failed'
  /** Postgres did not answer the settle; whatever the worker did is all-or-nothing. */
  | 'database_unreachable';

/**
 * The gateway's view of one creation: either the worker's result (read from the job or, after a
 * timeout, from creation_requests), or `unavailable` when nothing was created and nothing will be.
 */
export type CreationOutcome =
  | { kind: 'completed'; result: CreateLinksResult }
  | { kind: 'unavailable'; reason: UnavailableReason };

export interface CreationClient {
  /** Enqueues, waits at most `timeoutMs`, never leaves a half-known outcome. */
  submit(
    payload: Omit<CreateLinksPayload, 'deadline' | 'traceparent'>,
    timeoutMs: number,
  ): Promise<CreationOutcome>;
  close(): Promise<void>;
}
