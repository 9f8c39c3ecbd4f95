import { randomBytes, randomUUID } from 'node:crypto';
import type { LinkDraft } from '@linkservice/contracts';
import type { Database, DbHandle, Environment } from '@linkservice/db';
import { newId } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';
import { createLogger } from '@linkservice/logger';
import type {
  CreateLinksJobResult,
  CreateLinksPayload,
  CreationClientOptions,
  CreationOutcome,
  EntryResult,
} from '@linkservice/creation';
import {
  BullCreationClient,
  CreationTransactions,
  CreationRequestsRepository,
  CREATE_LINKS_QUEUE,
  redisOptionsFromUrl,
} from '@linkservice/creation';
import type { Tenant } from '@linkservice/testing';
import { createTenant, testDatabase, testEnvironment } from '@linkservice/testing';
import type { Worker } from 'bullmq';
import { Queue, QueueEvents } from 'bullmq';
import type { Kysely } from 'kysely';
import { CreationGroupWriter } from '../creation-group.writer';
import type { DrawAliases } from '../group-inserts';
import { LinkInserts } from '../link-inserts.repository';
import { LoneCreations } from '../lone-creation.repository';
import { InProcessWorkers } from './in-process-workers';

/**
 * A new tenant whose live environment has an enabled endpoint on link.created, so its
 * creations write events and deliveries (the endpoint's secret is never opened here).
 */
export async function createSubscribedTenant(db: Kysely<Database>): Promise<Tenant> {
  const app = await createTenant(db);
  await db
    .insertInto('webhook_endpoints')
    .values({
      id: newId('whk'),
      app_id: app.appId,
      environment: 'live',
      url: 'https://receiver.invalid/hook',
      event_types: ['link.created'],
      secret: 'never opened here',
    })
    .execute();
  return app;
}

/**
 * A real CreationClient and in-process workers on the run's Postgres and Redis, under a Redis
 * prefix of their own so workers of one harness never take another harness's jobs.
 */
export class CreationHarness {
  readonly prefix: string;
  readonly client: BullCreationClient;
  readonly logger: Logger;
  private readonly workers: InProcessWorkers;
  private readonly extras: { close(): Promise<unknown> }[] = [];

  constructor(
    readonly db: Kysely<Database>,
    private readonly redisUrl: string,
    basePrefix: string,
    readonly linkDomain = 'links.test',
    clientOptions: Pick<CreationClientOptions, 'groupsInFlight' | 'groupWaitMs'> = {},
  ) {
    this.prefix = `${basePrefix}-w${randomBytes(3).toString('hex')}`;
    this.logger = createLogger('worker-test', process.env.LOG_LEVEL ?? 'silent');
    this.client = new BullCreationClient({
      redis: { REDIS_URL: redisUrl },
      prefix: this.prefix,
      requests: new CreationRequestsRepository(db),
      logger: this.logger,
      ...clientOptions,
    });
    this.workers = new InProcessWorkers({
      db,
      redisUrl,
      prefix: this.prefix,
      logger: this.logger,
      linkDomain,
    });
  }

  /** A worker wired by the worker's own buildDeps, on this harness's pool. */
  startWorker(options: { testDelayMs?: number; concurrency?: number } = {}): Worker {
    return this.workers.start(options);
  }

  stopWorkers(): Promise<void> {
    return this.workers.stop();
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

export function newHarness(
  db: Kysely<Database>,
  clientOptions?: ConstructorParameters<typeof CreationHarness>[4],
): CreationHarness {
  const env = testEnvironment();
  return new CreationHarness(db, env.redisUrl, env.redisPrefix, undefined, clientOptions);
}

/** What a worker test file works with: its pool and a harness whose worker is running. */
export interface CreationTestKit {
  /** The file's database; opened in beforeAll, closed in afterAll. */
  readonly db: Kysely<Database>;
  /** The pool under `db`, for tests that hold a connection of their own or wrap the pool. */
  readonly pool: DbHandle['pool'];
  readonly harness: CreationHarness;
  /** A writer on the file's pool, without a queue (see creationWriter). */
  writer(drawAliases?: DrawAliases): CreationGroupWriter;
}

/**
 * Opens a pool and a harness with one running worker for the calling test file (beforeAll), and
 * closes both (afterAll), so worker test files share their setup instead of each spelling it out.
 */
export function useCreationHarness(
  worker: Parameters<CreationHarness['startWorker']>[0] = {},
): CreationTestKit {
  let running: { postgres: DbHandle; harness: CreationHarness } | undefined;
  beforeAll(() => {
    const postgres = testDatabase(20);
    const harness = newHarness(postgres.db);
    harness.startWorker(worker);
    running = { postgres, harness };
  });
  afterAll(async () => {
    await running?.harness.close();
    await running?.postgres.close();
  });
  const runningOf = () => {
    if (!running) throw new Error('the creation harness starts in beforeAll');
    return running;
  };
  const kit: CreationTestKit = {
    get db() {
      return runningOf().postgres.db;
    },
    get pool() {
      return runningOf().postgres.pool;
    },
    get harness() {
      return runningOf().harness;
    },
    writer: (drawAliases) => creationWriter(kit, drawAliases),
  };
  return kit;
}

/** The links an answer's entries created, in entry order. */
export function createdLinks(results: EntryResult[]) {
  return results.flatMap((entry) => (entry.ok ? [entry.link] : []));
}

/**
 * A CreationGroupWriter on the kit's pool, without a queue (writer-level tests), drawing
 * generated aliases with `drawAliases` when a test needs a collision.
 */
export function creationWriter(
  kit: Pick<CreationTestKit, 'db' | 'harness'>,
  drawAliases?: DrawAliases,
): CreationGroupWriter {
  return new CreationGroupWriter(
    new CreationTransactions(kit.db),
    new LinkInserts(),
    new LoneCreations(kit.db),
    {
      linkDomain: kit.harness.linkDomain,
      logger: kit.harness.logger,
      ...(drawAliases ? { drawAliases } : {}),
    },
  );
}

/** One request written on its own, as a job of one request is: its answer. */
export async function writeOne(
  writer: CreationGroupWriter,
  payload: CreateLinksPayload,
): Promise<CreateLinksJobResult> {
  const answer = (await writer.write([payload])).get(payload.requestId);
  if (!answer) throw new Error(`no answer for ${payload.requestId}`);
  return answer;
}

/** The job's result, or a failure naming why the answer was not one. */
export function completed(outcome: CreationOutcome) {
  if (outcome.kind !== 'completed') throw new Error(`expected completed, got ${outcome.reason}`);
  return outcome.result;
}

/** A job payload (without its deadline) creating `drafts` for a tenant (see createTenant). */
export function creation(
  app: { appId: string },
  drafts: LinkDraft[],
  options: { environment?: Environment; creationBudget?: number } = {},
): Omit<CreateLinksPayload, 'deadline'> {
  return {
    requestId: `crt_${randomUUID()}`,
    appId: app.appId,
    environment: options.environment ?? 'live',
    entries: drafts.map((d, index) => ({ index, draft: d })),
    creationBudget: options.creationBudget ?? drafts.length,
  };
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
