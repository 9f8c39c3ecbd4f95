import { randomBytes } from 'node:crypto';
import type { Worker } from 'bullmq';
import { createLogger } from '@linkservice/logger';
import { testEnvironment } from '@linkservice/testing';
import type { WorkerResources } from '@linkservice/worker';
import {
  buildDeps as buildWorkerDeps,
  loadConfig as loadWorkerConfig,
  startCreationWorker,
} from '@linkservice/worker';
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
  const logger = createLogger('worker', config.LOG_LEVEL);
  let running: { worker: Worker; resources: WorkerResources } | undefined;

  const worker: TestCreationWorker = {
    start: async ({ testDelayMs } = {}) => {
      if (running) throw new Error('the worker is already running');
      // The worker's own composition root and pool, as in its own process.
      const workerConfig = loadWorkerConfig({
        NODE_ENV: 'test',
        LOG_LEVEL: config.LOG_LEVEL,
        DATABASE_URL: config.DATABASE_URL,
        DATABASE_POOL_SIZE: '5',
        REDIS_URL: config.REDIS_URL,
        REDIS_PREFIX: config.REDIS_PREFIX,
        LINK_DOMAIN: config.LINK_DOMAIN,
        WORKER_CONCURRENCY: String(options.workerConcurrency ?? 4),
        WORKER_TEST_DELAY_MS: String(testDelayMs ?? 0),
      });
      const resources = buildWorkerDeps(workerConfig, logger);
      running = { worker: startCreationWorker(resources.deps), resources };
      // Closing a BullMQ Worker while its blocking connection is still connecting makes that
      // connection emit an 'error' nobody listens to any more: wait until it is up.
      await running.worker.waitUntilReady();
    },
    stop: async () => {
      const stopping = running;
      running = undefined;
      await stopping?.worker.close();
      await stopping?.resources.close();
    },
    close: async () => {
      await worker.stop();
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
