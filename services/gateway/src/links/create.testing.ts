import { randomBytes } from 'node:crypto';
import type { Worker } from 'bullmq';
import { createDb } from '@linkservice/db';
import { closeRedis, createRedisClient } from '@linkservice/lifecycle';
import { createLogger } from '@linkservice/logger';
import { testEnvironment } from '@linkservice/testing';
import { startCreationWorker } from '@linkservice/worker';
import type { Link } from '@linkservice/contracts';
import type { StoppedEarly } from '@linkservice/creation';
import type { ApiResponse, StartGatewayOptions, TestGateway } from '../testing';
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
  const logger = createLogger('worker', config.LOG_LEVEL);
  // BullMQ's blocking commands need a connection that waits out reconnects.
  const connection = createRedisClient(config.REDIS_URL, {
    connectionName: `${config.REDIS_PREFIX}:test-worker`,
    logger,
    maxRetriesPerRequest: null,
  });
  let running: Worker | undefined;

  const worker: TestCreationWorker = {
    start: async ({ testDelayMs } = {}) => {
      if (running) throw new Error('the worker is already running');
      const started = startCreationWorker({
        db: postgres.db,
        connection,
        prefix: config.REDIS_PREFIX,
        logger,
        linkDomain: config.LINK_DOMAIN,
        concurrency: options.workerConcurrency ?? 4,
        testDelayMs,
      });
      running = started;
      // Closing a BullMQ Worker while its blocking connection is still connecting makes that
      // connection emit an 'error' nobody listens to any more: wait until it is up.
      await started.waitUntilReady();
    },
    stop: async () => {
      const stopping = running;
      running = undefined;
      await stopping?.close();
    },
    close: async () => {
      await worker.stop();
      await closeRedis(connection);
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

/** A batch response body, typed for assertions. */
export interface BatchBody {
  created: number;
  failed: number;
  notAttempted: number;
  results: {
    index: number;
    ok: boolean;
    link?: Link;
    error?: string;
    message?: string;
    fieldErrors?: Record<string, string>;
  }[];
  stoppedEarly?: StoppedEarly;
}

export function batchBody(res: ApiResponse): BatchBody {
  return res.body as BatchBody;
}
