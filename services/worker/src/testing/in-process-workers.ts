import type { Database } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';
import { testEnvironment } from '@linkservice/testing';
import type { Worker } from 'bullmq';
import type { Kysely } from 'kysely';
import { loadConfig } from '../config';
import type { WorkerResources } from '../deps';
import { buildDeps } from '../deps';
import type { WebhookDelivery, WebhookDeliveryOptions } from '../webhooks/webhook-delivery';
import { startWebhookDelivery } from '../webhooks/webhook-delivery';
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
 * Webhook delivery beside the creation worker: the relay and the delivery consumer, as
 * startWorker runs them. The relay claims due deliveries of the whole database, so a test file
 * that runs it on the run's shared database may deliver (or refuse, per its settings) other
 * files' deliveries: give it its own database when that matters.
 */
export interface InProcessWebhooks extends WebhookDeliveryOptions {
  /** WEBHOOK_* settings, e.g. WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' for receivers on this host. */
  env?: Record<string, string>;
}

/**
 * The one way tests run the creation worker in their own process: each started worker is wired
 * by the worker's own buildDeps (on the test's pool), with its own Redis connections as in its
 * own process, and stop() closes every one of them.
 */
export class InProcessWorkers {
  private readonly running = new Set<{
    worker: Worker;
    webhooks: WebhookDelivery | undefined;
    resources: WorkerResources;
  }>();

  constructor(private readonly options: InProcessWorkersOptions) {}

  get size(): number {
    return this.running.size;
  }

  start({
    testDelayMs = 0,
    concurrency = 8,
    webhooks,
  }: { testDelayMs?: number; concurrency?: number; webhooks?: InProcessWebhooks } = {}): Worker {
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
      ...webhooks?.env,
    });
    const resources = buildDeps(config, logger, { clients: (opened) => ({ ...opened, db }) });
    const worker = startCreationWorker(resources.deps);
    this.running.add({
      worker,
      webhooks: webhooks ? startWebhookDelivery(resources.deps, webhooks) : undefined,
      resources,
    });
    return worker;
  }

  /** Lets in-flight jobs finish, then closes every worker and its clients. */
  async stop(): Promise<void> {
    const stopping = [...this.running];
    this.running.clear();
    await Promise.all(
      stopping.map(async ({ worker, webhooks, resources }) => {
        await Promise.all([worker.close(), webhooks?.stop()]);
        await resources.close();
      }),
    );
  }
}
