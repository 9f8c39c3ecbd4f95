import { randomBytes, randomUUID } from 'node:crypto';
import type { LinkDraft } from '@linkservice/contracts';
import type { Database, DbHandle, Environment } from '@linkservice/db';
import { createDb, newId } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';
import { createLogger } from '@linkservice/logger';
import type { CreateLinksPayload, CreationOutcome } from '@linkservice/creation';
import { BullCreationClient, CREATE_LINKS_QUEUE, redisOptionsFromUrl } from '@linkservice/creation';
import { testEnvironment } from '@linkservice/testing';
import type { Worker } from 'bullmq';
import { Queue, QueueEvents } from 'bullmq';
import type { Kysely } from 'kysely';
import { loadConfig } from '../config';
import type { WorkerResources } from '../deps';
import { buildDeps } from '../deps';
import { startCreationWorker } from '../worker';

export { draft } from './link-drafts';

/**
 * A real CreationClient and in-process workers on the run's Postgres and Redis, under a Redis
 * prefix of their own so workers of one harness never take another harness's jobs.
 */
export class CreationHarness {
  readonly prefix: string;
  readonly client: BullCreationClient;
  readonly logger: Logger;
  private readonly workers = new Set<{ worker: Worker; resources: WorkerResources }>();
  private readonly extras: { close(): Promise<unknown> }[] = [];

  constructor(
    readonly db: Kysely<Database>,
    private readonly redisUrl: string,
    basePrefix: string,
    readonly linkDomain = 'links.test',
  ) {
    this.prefix = `${basePrefix}-w${randomBytes(3).toString('hex')}`;
    this.logger = createLogger('worker-test', process.env.LOG_LEVEL ?? 'silent');
    this.client = new BullCreationClient({
      redisUrl,
      prefix: this.prefix,
      db,
      logger: this.logger,
    });
  }

  /** A worker wired by the worker's own buildDeps, on this harness's pool. */
  startWorker(options: { testDelayMs?: number; concurrency?: number } = {}): Worker {
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: testEnvironment().databaseUrl,
      REDIS_URL: this.redisUrl,
      REDIS_PREFIX: this.prefix,
      LINK_DOMAIN: this.linkDomain,
      WORKER_CONCURRENCY: String(options.concurrency ?? 8),
      WORKER_TEST_DELAY_MS: String(options.testDelayMs ?? 0),
    });
    const resources = buildDeps(config, this.logger, {
      clients: (opened) => ({ ...opened, db: this.db }),
    });
    const worker = startCreationWorker(resources.deps);
    this.workers.add({ worker, resources });
    return worker;
  }

  async stopWorkers(): Promise<void> {
    const running = [...this.workers];
    this.workers.clear();
    await Promise.all(
      running.map(async ({ worker, resources }) => {
        await worker.close();
        await resources.close();
      }),
    );
  }

  /** A producer-side Queue and QueueEvents for adding jobs by hand (redeliveries). */
  async rawQueue(): Promise<{ queue: Queue; events: QueueEvents }> {
    const queue = new Queue(CREATE_LINKS_QUEUE, {
      connection: redisOptionsFromUrl(this.redisUrl),
      prefix: this.prefix,
    });
    const events = new QueueEvents(CREATE_LINKS_QUEUE, {
      connection: redisOptionsFromUrl(this.redisUrl),
      prefix: this.prefix,
    });
    queue.on('error', () => undefined);
    events.on('error', () => undefined);
    this.extras.push(queue, events);
    await Promise.all([queue.waitUntilReady(), events.waitUntilReady()]);
    return { queue, events };
  }

  submit(
    payload: Omit<CreateLinksPayload, 'deadline'>,
    timeoutMs = 10_000,
  ): Promise<CreationOutcome> {
    return this.client.submit(payload, timeoutMs);
  }

  async close(): Promise<void> {
    await this.stopWorkers();
    await Promise.all(this.extras.map((extra) => extra.close()));
    await this.client.close();
  }
}

/** One pool per test file; close it in afterAll. */
export function testDatabase(): DbHandle {
  const logger = createLogger('worker-test', process.env.LOG_LEVEL ?? 'silent');
  return createDb({
    connectionString: testEnvironment().databaseUrl,
    max: 20,
    onConnectionError: (error) => {
      logger.warn({ err: error }, 'postgres connection lost');
    },
  });
}

export function newHarness(db: Kysely<Database>): CreationHarness {
  const env = testEnvironment();
  return new CreationHarness(db, env.redisUrl, env.redisPrefix);
}

export interface TestApp {
  id: string;
  subdomainKey: string;
}

/** A fresh app (tenant) per test, as linkctl would create it. */
export async function createTestApp(
  db: Kysely<Database>,
  linkAllowance: number | null = null,
): Promise<TestApp> {
  const id = newId('app');
  const subdomainKey = `w${randomBytes(6).toString('hex')}`;
  await db
    .insertInto('apps')
    .values({
      id,
      name: `Worker test ${subdomainKey}`,
      subdomain_key: subdomainKey,
      link_allowance: linkAllowance,
    })
    .execute();
  return { id, subdomainKey };
}

export function creation(
  app: TestApp,
  drafts: LinkDraft[],
  options: { environment?: Environment; creationBudget?: number } = {},
): Omit<CreateLinksPayload, 'deadline'> {
  return {
    requestId: `crt_${randomUUID()}`,
    appId: app.id,
    environment: options.environment ?? 'live',
    entries: drafts.map((d, index) => ({ index, draft: d })),
    creationBudget: options.creationBudget ?? drafts.length,
  };
}

/** Links of an app as stored, oldest id first. */
export function linksOf(db: Kysely<Database>, appId: string) {
  return db.selectFrom('links').selectAll().where('app_id', '=', appId).orderBy('id').execute();
}

/** The app's link counts as the trigger on links keeps them. */
export async function linkCounts(db: Kysely<Database>, appId: string) {
  const row = await db
    .selectFrom('apps')
    .select(['live_link_count', 'test_link_count'])
    .where('id', '=', appId)
    .executeTakeFirstOrThrow();
  return { live: row.live_link_count, test: row.test_link_count };
}

export async function requestRow(db: Kysely<Database>, requestId: string) {
  return db
    .selectFrom('creation_requests')
    .selectAll()
    .where('id', '=', requestId)
    .executeTakeFirst();
}
