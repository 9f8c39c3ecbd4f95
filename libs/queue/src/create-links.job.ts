import { z } from 'zod';
import { linkDraftSchema } from '@linkservice/contracts';
import type { Link } from '@linkservice/contracts';

/**
 * The one job type of the creation queue: create links for one app and environment, in order.
 * A single POST /links is a job with one entry. Producer (gateway) and consumer (worker) both
 * parse with these schemas. The payload never carries a key or any other secret.
 */
export const CREATE_LINKS_QUEUE = 'link-creations';
export const CREATE_LINKS_JOB = 'create-links';

export const createLinksPayloadSchema = z.object({
  /** Also the BullMQ job id and the creation_requests primary key. */
  requestId: z.string().min(1),
  appId: z.string().min(1),
  environment: z.enum(['live', 'test']),
  /** Entries that passed the gateway's validation, with their position in the request. */
  entries: z.array(z.object({ index: z.number().int().min(0), draft: linkDraftSchema })).min(1),
  /**
   * How many links the gateway reserved against the hourly creation limit. When an entry would
   * be created past it, that entry is refused as rate_limited and the job stops.
   */
  creationBudget: z.number().int().min(0),
  /** Epoch ms after which the gateway has stopped waiting: the worker must not create anything. */
  deadline: z.number().int(),
});
export type CreateLinksPayload = z.infer<typeof createLinksPayloadSchema>;

const linkSchema = z.custom<Link>((value) => typeof value === 'object' && value !== null);

export const entryResultSchema = z.discriminatedUnion('ok', [
  z.object({ index: z.number().int(), ok: z.literal(true), link: linkSchema }),
  z.object({
    index: z.number().int(),
    ok: z.literal(false),
    error: z.enum(['validation_failed', 'rate_limited', 'plan_limit_reached']),
    message: z.string(),
    fieldErrors: z.record(z.string(), z.string()).optional(),
  }),
]);
export type EntryResult = z.infer<typeof entryResultSchema>;

export const stoppedEarlySchema = z.object({
  reason: z.enum(['rate_limited', 'plan_limit_reached']),
  atIndex: z.number().int(),
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
 * The gateway's view of one creation: either the worker's result (read from the job or, after a
 * timeout, from creation_requests), or `unavailable` when nothing was created and nothing will be.
 */
export type CreationOutcome =
  | { kind: 'completed'; result: CreateLinksResult }
  | { kind: 'unavailable'; reason: 'timeout' | 'queue_unreachable' };

export interface CreationClient {
  /** Enqueues, waits at most `timeoutMs`, never leaves a half-known outcome. */
  submit(
    payload: Omit<CreateLinksPayload, 'deadline'>,
    timeoutMs: number,
  ): Promise<CreationOutcome>;
  close(): Promise<void>;
}
