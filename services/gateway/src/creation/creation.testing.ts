import { randomBytes } from 'node:crypto';
import type { Database } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import { createLogger } from '@linkservice/logger';
import type { ApiResponse, Tenant, TenantOptions } from '@linkservice/testing';
import { createTenant, testEnvironment } from '@linkservice/testing';
import { InProcessWorkers } from '@linkservice/worker';
import type { Kysely } from 'kysely';
import type { StartGatewayOptions, TestGateway } from '../testing';
import { startGateway } from '../testing';

/** An in-process creation worker that a test can stop and start again. */
export interface TestCreationWorker {
  /** Resolves once the worker's connections are up, so a prompt stop() cannot race them. */
  start(options?: { testDelayMs?: number }): Promise<void>;
  /** Lets in-flight jobs finish, then stops taking new ones. */
  stop(): Promise<void>;
  close(): Promise<void>;
}

export interface CreationStack {
  gateway: TestGateway;
  worker: TestCreationWorker;
  stop(): Promise<void>;
}

/**
 * The gateway with its real creation client and limiter, plus the real worker consuming the
 * same queue (same database and REDIS_PREFIX), both in this process. Each stack gets its own
 * REDIS_PREFIX under the run's, so no other test file's worker takes its jobs (a stopped worker
 * must really mean nobody creates) and teardown still finds every key.
 */
export async function startCreationStack(
  options: StartGatewayOptions & { workerConcurrency?: number } = {},
): Promise<CreationStack> {
  const redisPrefix = `${testEnvironment().redisPrefix}:${randomBytes(4).toString('hex')}`;
  const gateway = await startGateway({
    ...options,
    env: { REDIS_PREFIX: redisPrefix, ...options.env },
  });
  const { config } = gateway.deps;
  // The worker's own pool, as in its own process. createDb listens for the 'error' a checked-out
  // client emits when Postgres ends a creation transaction left idle past its deadline.
  const postgres = createDb({ connectionString: config.DATABASE_URL, max: 5 });
  const workers = new InProcessWorkers({
    db: postgres.db,
    redisUrl: config.REDIS_URL,
    prefix: config.REDIS_PREFIX,
    logger: createLogger('worker', config.LOG_LEVEL),
    linkDomain: config.LINK_DOMAIN,
  });

  const worker: TestCreationWorker = {
    start: async ({ testDelayMs } = {}) => {
      if (workers.size > 0) throw new Error('the worker is already running');
      const started = workers.start({ testDelayMs, concurrency: options.workerConcurrency ?? 4 });
      // Closing a BullMQ Worker while its blocking connection is still connecting makes that
      // connection emit an 'error' nobody listens to any more: wait until it is up.
      await started.waitUntilReady();
    },
    stop: () => workers.stop(),
    close: async () => {
      await workers.stop();
      await postgres.close();
    },
  };
  await worker.start();
  return {
    gateway,
    worker,
    stop: async () => {
      await worker.close();
      await gateway.stop();
    },
  };
}

/** What a creation test file works with: the running stack and its requests. */
export interface CreationTestKit {
  /** The stack of this file; started in beforeAll, stopped in afterAll. */
  readonly stack: CreationStack;
  /** The gateway's database, for reading what a creation stored. */
  readonly db: Kysely<Database>;
  newTenant: (options?: TenantOptions) => Promise<Tenant>;
  /** POST /api/v1/links */
  create: (key: string, body: unknown) => Promise<ApiResponse>;
  /** POST /api/v1/links/batch with any body. */
  postBatch: (key: string, body: unknown) => Promise<ApiResponse>;
  /** POST /api/v1/links/batch with `{ links }`. */
  createBatch: (key: string, links: unknown[]) => Promise<ApiResponse>;
  /** Archives the app's link with this alias in the database, as an archive leaves it. */
  archiveAlias: (appId: string, alias: string) => Promise<void>;
}

/**
 * Starts one creation stack for the calling test file (beforeAll) and stops it (afterAll), so
 * creation test files share their setup instead of each spelling it out.
 */
export function useCreationStack(
  options: Parameters<typeof startCreationStack>[0] = {},
): CreationTestKit {
  let running: CreationStack | undefined;
  beforeAll(async () => {
    running = await startCreationStack(options);
  });
  afterAll(async () => {
    await running?.stop();
  });
  const stackOf = (): CreationStack => {
    if (!running) throw new Error('the creation stack starts in beforeAll');
    return running;
  };
  const post = (path: string, key: string, body: unknown) =>
    stackOf().gateway.api(path, { key, method: 'POST', body });
  return {
    get stack() {
      return stackOf();
    },
    get db() {
      return stackOf().gateway.deps.db;
    },
    newTenant: (tenantOptions) => createTenant(stackOf().gateway.deps.db, tenantOptions),
    create: (key, body) => post('/api/v1/links', key, body),
    postBatch: (key, body) => post('/api/v1/links/batch', key, body),
    createBatch: (key, links) => post('/api/v1/links/batch', key, { links }),
    archiveAlias: async (appId, alias) => {
      await stackOf()
        .gateway.deps.db.updateTable('links')
        .set({ archived_at: new Date() })
        .where('app_id', '=', appId)
        .where('alias', '=', alias)
        .execute();
    },
  };
}
