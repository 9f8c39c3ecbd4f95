import { fork } from 'node:child_process';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import type { Creation, LinkRow } from './bare';
import { createPool, NOT_FOUND, readCreation, redisOptions, send, listen, toLink } from './bare';

/**
 * Baseline for creations handed to a worker through BullMQ, the shape the brief fixes for the
 * gateway and the worker, with nothing else: the bare insert server's request (JSON body, key
 * check, the row's values; insert-server.ts), but the row goes to a worker process
 * (queued-insert-worker.ts) as part of a BullMQ job, and the answer waits for the job's
 * completion event (QueueEvents). Group commit as the gateway's: one job in flight; the
 * requests that arrive meanwhile leave together, as one job and one INSERT, once it completes.
 * No limiter, validation beyond JSON, idempotency, exactly-once bookkeeping, logging or
 * tracing.
 *
 * Its queue is under REDIS_PREFIX (the bench deletes it afterwards).
 */

/** A returned link as the job's JSON return value holds it: its times as ISO strings. */
type JobRow = Omit<LinkRow, 'expires_at' | 'archived_at' | 'created_at' | 'updated_at'> & {
  expires_at: string | null;
  archived_at: string | null;
  created_at: string;
  updated_at: string;
};

function linkRowOf(row: JobRow): LinkRow {
  const at = (time: string | null) => (time === null ? null : new Date(time));
  return {
    ...row,
    expires_at: at(row.expires_at),
    archived_at: at(row.archived_at),
    created_at: new Date(row.created_at),
    updated_at: new Date(row.updated_at),
  };
}

interface Waiter {
  creation: Creation;
  res: ServerResponse;
}

const pool = createPool();
const connection = redisOptions();
const prefix = process.env.REDIS_PREFIX;
const queue = new Queue('insert', { connection, prefix });
const events = new QueueEvents('insert', { connection, prefix });
queue.on('error', () => undefined);
events.on('error', () => undefined);
const worker = fork(join(__dirname, 'queued-insert-worker.js'), [], { stdio: 'inherit' });

/** Requests waiting for the job in flight to complete. */
let gathered: Waiter[] = [];
/** The group of the job in flight (at most one), by job id. */
const sent = new Map<string, Waiter[]>();
let jobs = 0;

function sendGathered(): void {
  if (sent.size > 0 || gathered.length === 0) return;
  const group = gathered;
  gathered = [];
  // Known before it is added: its completion may be read before the add's reply.
  const jobId = `group-${++jobs}`;
  sent.set(jobId, group);
  const rows = group.map(({ creation }) => creation.values);
  queue.add('insert', { rows }, { jobId }).catch((error: unknown) => {
    sent.delete(jobId);
    for (const { res } of group) send(res, 503, { error: 'unavailable', message: String(error) });
    sendGathered();
  });
}

events.on('completed', ({ jobId, returnvalue }) => {
  const group = sent.get(jobId);
  if (!group) return;
  sent.delete(jobId);
  const rows = new Map((returnvalue as unknown as JobRow[]).map((row) => [row.id, linkRowOf(row)]));
  for (const { creation, res } of group) {
    const row = rows.get(creation.values[0]);
    if (row) send(res, 201, { link: toLink(row, creation.auth.subdomain_key) });
    else send(res, 500, { error: 'internal', message: 'not inserted' });
  }
  sendGathered();
});

events.on('failed', ({ jobId, failedReason }) => {
  const group = sent.get(jobId);
  if (!group) return;
  sent.delete(jobId);
  for (const { res } of group) send(res, 500, { error: 'internal', message: failedReason });
  sendGathered();
});

async function createLink(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const creation = await readCreation(pool, req, res);
  if (!creation) return;
  // The requests read in this event-loop turn leave together when no job is in flight.
  if (gathered.length === 0) setImmediate(sendGathered);
  gathered.push({ creation, res });
}

function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'POST' && req.url === '/api/v1/links') return createLink(req, res);
  send(res, 404, NOT_FOUND);
  return Promise.resolve();
}

listen('baseline queued insert server', pool, handle);
process.on('SIGTERM', () => {
  worker.kill('SIGTERM');
  void Promise.all([queue.close(), events.close()]);
});
