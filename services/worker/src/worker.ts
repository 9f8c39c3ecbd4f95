import type { Database } from '@linkservice/db';
import { LinkCache } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { CreateLinksJobResult } from '@linkservice/creation';
import { CREATE_LINKS_QUEUE, CreationTransactions } from '@linkservice/creation';
import type { KeepJobs } from 'bullmq';
import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import { createLinksProcessor } from './create-links.job';
import { LinkCreationService } from './create-links.service';
import { LinksRepository } from './links.repository';

export interface CreationWorkerDeps {
  db: Kysely<Database>;
  /** Must have maxRetriesPerRequest: null (BullMQ's blocking commands wait out reconnects). */
  connection: Redis;
  /** REDIS_PREFIX: BullMQ's key prefix, the same the gateway's CreationClient uses. */
  prefix: string;
  logger: Logger;
  linkDomain: string;
  concurrency: number;
  keepCompleted?: KeepJobs;
  keepFailed?: KeepJobs;
  /** Test-only pause inside each creation transaction. */
  testDelayMs?: number;
}

/**
 * Starts consuming create-links jobs. Used by main.ts and, in-process, by the tests. Closing the
 * returned Worker lets in-flight jobs finish; the connection stays the caller's to close.
 */
export function startCreationWorker(deps: CreationWorkerDeps): Worker {
  const service = new LinkCreationService(
    new CreationTransactions(deps.db),
    new LinksRepository(deps.db),
    {
      linkDomain: deps.linkDomain,
      logger: deps.logger,
      testDelayMs: deps.testDelayMs,
      // On the queue connection, the one the Worker below completes jobs on: Redis runs one
      // connection's commands in order, so the invalidation (sent, not awaited, right after the
      // commit) is done before the job's completion event exists, without a round trip of its own.
      // While Redis is away the job cannot complete anyway, and the invalidation waits for the
      // reconnect like BullMQ's own commands.
      linkCache: new LinkCache(deps.connection, deps.prefix),
    },
  );
  const worker = new Worker<unknown, CreateLinksJobResult>(
    CREATE_LINKS_QUEUE,
    createLinksProcessor(service, deps.logger),
    {
      connection: deps.connection,
      prefix: deps.prefix,
      concurrency: deps.concurrency,
      removeOnComplete: deps.keepCompleted ?? { age: 3_600, count: 1_000 },
      removeOnFail: deps.keepFailed ?? { age: 7 * 24 * 3_600, count: 5_000 },
    },
  );
  worker.on('error', (error) => {
    deps.logger.warn({ err: error }, 'creation worker: redis error');
  });
  worker.on('failed', (job, error) => {
    deps.logger.warn(
      { err: error, requestId: job?.id, attemptsMade: job?.attemptsMade },
      'creation job attempt failed',
    );
  });
  return worker;
}
