import type { Database } from '@linkservice/db';
import { closeRedis, createRedisClient } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import { startCreationWorker } from '../worker';

export interface InProcessWorkersOptions {
  db: Kysely<Database>;
  redisUrl: string;
  /** The queue's Redis prefix: only jobs added under it reach these workers. */
  prefix: string;
  logger: Logger;
  linkDomain: string;
}

/**
 * The one way tests run the creation worker in their own process: each started worker gets its
 * own blocking connection, as in its own process, and stop() closes every one of them.
 */
export class InProcessWorkers {
  private readonly running = new Set<{ worker: Worker; connection: Redis }>();

  constructor(private readonly options: InProcessWorkersOptions) {}

  get size(): number {
    return this.running.size;
  }

  start({
    testDelayMs,
    concurrency = 8,
  }: { testDelayMs?: number; concurrency?: number } = {}): Worker {
    const { db, redisUrl, prefix, logger, linkDomain } = this.options;
    // BullMQ's blocking commands need a connection that waits out reconnects.
    const connection = createRedisClient(redisUrl, {
      connectionName: `${prefix}:test-worker`,
      logger,
      maxRetriesPerRequest: null,
    });
    const worker = startCreationWorker({
      db,
      connection,
      prefix,
      logger,
      linkDomain,
      concurrency,
      testDelayMs,
    });
    this.running.add({ worker, connection });
    return worker;
  }

  /** Lets in-flight jobs finish, then closes every worker and its connection. */
  async stop(): Promise<void> {
    const stopping = [...this.running];
    this.running.clear();
    await Promise.all(
      stopping.map(async ({ worker, connection }) => {
        await worker.close();
        await closeRedis(connection);
      }),
    );
  }
}
