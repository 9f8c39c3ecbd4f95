import type { Database } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';
import { testEnvironment } from '@linkservice/testing';
import type { Worker } from 'bullmq';
import type { Kysely } from 'kysely';
import { loadConfig } from '../config';
import type { WorkerResources } from '../deps';
import { buildDeps } from '../deps';
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
 * The one way tests run the creation worker in their own process: each started worker is wired
 * by the worker's own buildDeps (on the test's pool), with its own Redis connections as in its
 * own process, and stop() closes every one of them.
 */
export class InProcessWorkers {
  private readonly running = new Set<{ worker: Worker; resources: WorkerResources }>();

  constructor(private readonly options: InProcessWorkersOptions) {}

  get size(): number {
    return this.running.size;
  }

  start({
    testDelayMs = 0,
    concurrency = 8,
  }: { testDelayMs?: number; concurrency?: number } = {}): Worker {
    const { db, redisUrl, prefix, logger, linkDomain } = this.options;
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: testEnvironment().databaseUrl,
      REDIS_URL: redisUrl,
      REDIS_PREFIX: prefix,
      LINK_DOMAIN: linkDomain,
      WORKER_CONCURRENCY: String(concurrency),
      WORKER_TEST_DELAY_MS: String(testDelayMs),
      WEBHOOK_ENCRYPTION_KEY: process.env.WEBHOOK_ENCRYPTION_KEY,
    });
    const resources = buildDeps(config, logger, { clients: (opened) => ({ ...opened, db }) });
    const worker = startCreationWorker(resources.deps);
    this.running.add({ worker, resources });
    return worker;
  }

  /** Lets in-flight jobs finish, then closes every worker and its clients. */
  async stop(): Promise<void> {
    const stopping = [...this.running];
    this.running.clear();
    await Promise.all(
      stopping.map(async ({ worker, resources }) => {
        await worker.close();
        await resources.close();
      }),
    );
  }
}
